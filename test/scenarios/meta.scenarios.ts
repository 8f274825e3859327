/**
 * End-to-end scenarios of the Meta routes: /health, /openapi.json (the
 * document's contract of docs/api.md#endpoints, #versioning-and-deprecation) and the /docs reference page with
 * its locally served script. Written against the Target interface.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { connect, type ApiClient } from "../support/client";
import type { Target } from "../support/target";

type Operation = {
  operationId?: string;
  summary?: string;
  tags?: string[];
  deprecated?: boolean;
  security?: Record<string, string[]>[];
  responses: Record<string, { description?: string; content?: Record<string, { schema?: Record<string, unknown> }> }>;
  [extension: `x-${string}`]: unknown;
};
type OpenApiDocument = {
  openapi: string;
  info: { title: string; version: string; description?: string };
  servers: { url: string; variables?: Record<string, { default: string }> }[];
  tags: { name: string; description?: string }[];
  "x-tagGroups": { name: string; tags: string[] }[];
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown>; securitySchemes?: Record<string, Record<string, unknown>> };
};

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/** Every operation of the document as [METHOD path, operation]. */
function operations(document: OpenApiDocument): [string, Operation][] {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, op]) => [`${method.toUpperCase()} ${path}`, op] as [string, Operation]),
  );
}

/** The Pets, Store and Meta operations this service has had since the foundation issue. */
const FOUNDATION_OPERATIONS: Record<string, { operationId: string; tag: string; public: boolean }> = {
  "GET /pets": { operationId: "listPets", tag: "Pets", public: true },
  "POST /pets": { operationId: "createPet", tag: "Pets", public: false },
  "GET /pets/{petId}": { operationId: "getPet", tag: "Pets", public: true },
  "PUT /pets/{petId}": { operationId: "replacePet", tag: "Pets", public: false },
  "PATCH /pets/{petId}": { operationId: "updatePet", tag: "Pets", public: false },
  "DELETE /pets/{petId}": { operationId: "deletePet", tag: "Pets", public: false },
  "GET /categories": { operationId: "listCategories", tag: "Pets", public: true },
  "POST /categories": { operationId: "createCategory", tag: "Pets", public: false },
  "GET /categories/{categoryId}": { operationId: "getCategory", tag: "Pets", public: true },
  "PATCH /categories/{categoryId}": { operationId: "updateCategory", tag: "Pets", public: false },
  "DELETE /categories/{categoryId}": { operationId: "deleteCategory", tag: "Pets", public: false },
  "GET /store/inventory": { operationId: "listInventory", tag: "Store", public: true },
  "GET /store/inventory/{petId}": { operationId: "getInventoryItem", tag: "Store", public: true },
  "GET /health": { operationId: "getHealth", tag: "Meta", public: true },
  "GET /openapi.json": { operationId: "getOpenApiDocument", tag: "Meta", public: true },
  "GET /docs": { operationId: "getApiReference", tag: "Meta", public: true },
};

/** Register the Meta scenarios (/health, /openapi.json, /docs) against the target `getTarget()` returns. */
export function metaScenarios(getTarget: () => Target): void {
  describe("meta", () => {
    let api: ApiClient;
    let document: OpenApiDocument;

    beforeAll(async () => {
      api = await connect(getTarget());
      document = (await api.get<OpenApiDocument>("/openapi.json")).body;
    });

    describe("GET /health", () => {
      it("answers 200 {status: ok} after checking the database, never cached", async () => {
        const res = await api.get("/health");
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ status: "ok" });
        expect(res.headers.get("cache-control")).toMatch(/no-store/);
        expect(res.headers.get("x-request-id")).toBeTruthy();
      });
    });

    describe("GET /openapi.json", () => {
      it("is an OpenAPI 3.0.3 document, version 1.0.0, served as JSON", async () => {
        const res = await api.get("/openapi.json");
        expect(res.status).toBe(200);
        expect(res.headers.get("content-type")).toMatch(/^application\/json/);
        expect(document.openapi).toBe("3.0.3");
        expect(document.info.version).toBe("1.0.0");
        expect(document.info.title).toBeTruthy();
        expect(document.info.description).toMatch(/compatib/i); // the compatibility policy (docs/api.md#versioning-and-deprecation)
      });

      it("has one server {base_url} whose variable defaults to an absolute URL of this deployment", () => {
        expect(document.servers).toHaveLength(1);
        expect(document.servers[0]!.url).toBe("{base_url}");
        const base = document.servers[0]!.variables!.base_url!.default;
        expect(new URL(base).protocol).toMatch(/^https?:$/);
        expect(base).not.toMatch(/\/$/);
      });

      it("groups its tags with x-tagGroups Pets, Store, Platform covering every tag", () => {
        const groups = document["x-tagGroups"];
        expect(groups.map((g) => g.name)).toEqual(["Pets", "Store", "Platform"]);
        expect(groups.find((g) => g.name === "Pets")!.tags).toContain("Pets");
        expect(groups.find((g) => g.name === "Store")!.tags).toContain("Store");
        expect(groups.find((g) => g.name === "Platform")!.tags).toEqual(expect.arrayContaining(["Accounts", "Events", "Meta"]));
        const declared = document.tags.map((t) => t.name);
        const grouped = groups.flatMap((g) => g.tags);
        expect([...grouped].sort()).toEqual([...declared].sort());
        for (const tag of document.tags) expect(tag.description, tag.name).toBeTruthy();
      });

      it("gives every operation a unique operationId, declared tags, a summary, x-stability and documented responses", () => {
        const ids = new Set<string>();
        const declared = new Set(document.tags.map((t) => t.name));
        for (const [name, op] of operations(document)) {
          expect(op.operationId, name).toMatch(/^[a-z][A-Za-z0-9]+$/);
          expect(ids.has(op.operationId!), `${name}: duplicate operationId`).toBe(false);
          ids.add(op.operationId!);
          expect(op.tags?.length, `${name}: tags`).toBeGreaterThan(0);
          for (const tag of op.tags!) expect(declared.has(tag), `${name}: undeclared tag ${tag}`).toBe(true);
          expect(op.summary?.trim(), `${name}: summary`).toBeTruthy();
          expect(["stable", "beta", "experimental"], `${name}: x-stability`).toContain(op["x-stability"]);
          expect(Array.isArray(op.security), `${name}: security marks`).toBe(true);
          const statuses = Object.keys(op.responses);
          expect(
            statuses.some((s) => /^2\d\d$/.test(s)),
            `${name}: a success response`,
          ).toBe(true);
          for (const status of statuses) {
            const response = op.responses[status]!;
            expect(response.description, `${name} ${status}: description`).toBeTruthy();
            if (Number(status) >= 400) {
              expect(response.content?.["application/json"]?.schema, `${name} ${status}: Error schema`).toEqual({ $ref: "#/components/schemas/Error" });
            }
            for (const [mediaType, content] of Object.entries(response.content ?? {})) {
              expect(content.schema, `${name} ${status} ${mediaType}: schema`).toBeTruthy();
            }
          }
        }
      });

      it("describes the Pets, Store and Meta operations of docs/api.md#endpoints with their security marks", () => {
        const byName = new Map(operations(document));
        for (const [name, expected] of Object.entries(FOUNDATION_OPERATIONS)) {
          const op = byName.get(name);
          expect(op, `${name} is documented`).toBeDefined();
          expect(op!.operationId, name).toBe(expected.operationId);
          expect(op!.tags, name).toEqual([expected.tag]);
          if (expected.public) {
            expect(op!.security, `${name} is public`).toEqual([]);
          } else {
            expect(op!.security, `${name} needs a key`).toEqual([{ bearerAuth: [] }]);
          }
        }
        expect(document.components.securitySchemes?.bearerAuth).toMatchObject({ type: "http", scheme: "bearer" });
      });

      it("marks GET /pets/{petId} deprecated with an x-sunset date; nothing else is deprecated without one", () => {
        const getPet = document.paths["/pets/{petId}"]!.get!;
        expect(getPet.deprecated).toBe(true);
        expect(getPet["x-sunset"]).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
        expect(Object.keys(getPet.responses)).toEqual(expect.arrayContaining(["200", "304", "404", "410"]));
        for (const [name, op] of operations(document)) {
          if (op.deprecated) expect(op["x-sunset"], name).toBeTruthy();
        }
      });

      it("registers the payload shapes as named components and refers to them", () => {
        for (const name of ["Pet", "Pets", "NewPet", "PetStatus", "Category", "NewCategory", "InventoryItem", "Error"]) {
          expect(document.components.schemas[name], name).toBeDefined();
        }
        const json = (path: string, method: string, status: string) => document.paths[path]![method]!.responses[status]!.content!["application/json"]!.schema;
        expect(json("/pets", "get", "200")).toEqual({ $ref: "#/components/schemas/Pets" });
        expect(json("/pets", "post", "201")).toEqual({ $ref: "#/components/schemas/Pet" });
        expect(json("/categories/{categoryId}", "get", "200")).toEqual({ $ref: "#/components/schemas/Category" });
        expect(json("/store/inventory/{petId}", "get", "200")).toEqual({ $ref: "#/components/schemas/InventoryItem" });
        const newPet = document.paths["/pets"]!.post as unknown as { requestBody: { content: Record<string, { schema: unknown }> } };
        expect(newPet.requestBody.content["application/json"]!.schema).toEqual({ $ref: "#/components/schemas/NewPet" });
        const pet = document.components.schemas.Pet as { required: string[]; properties: Record<string, Record<string, unknown>> };
        expect([...pet.required].sort()).toEqual(["categoryId", "id", "name", "status"]);
        expect(pet.properties.id).toMatchObject({ type: "integer", format: "int64" });
        expect(pet.properties.status).toEqual({ $ref: "#/components/schemas/PetStatus" });
        expect(document.components.schemas.PetStatus).toMatchObject({ type: "string", enum: ["available", "pending", "sold"] });
        const error = document.components.schemas.Error as { required: string[] };
        expect([...error.required].sort()).toEqual(["code", "message", "status"]);
      });
    });

    describe("GET /docs", () => {
      it("serves an HTML reference page rendered from /openapi.json with only local scripts", async () => {
        const res = await api.get<string>("/docs");
        expect(res.status).toBe(200);
        expect(res.headers.get("content-type")).toMatch(/^text\/html/);
        const html = res.body;
        expect(html).toContain('<script src="/docs/assets/scalar.js"></script>');
        expect(html).toContain("/openapi.json");
        // Renders with no outside network: no script, style, font or image from another origin.
        expect(html).not.toMatch(/(src|href)\s*=\s*["']?(https?:)?\/\//i);
        expect(html).not.toMatch(/@import\s+url\(\s*["']?(https?:)?\/\//i);
        const csp = res.headers.get("content-security-policy");
        if (csp) expect(csp).not.toMatch(/https?:\/\//);
      });

      it("serves the page's script from this service", async () => {
        const res = await getTarget().fetch("/docs/assets/scalar.js");
        expect(res.status).toBe(200);
        expect(res.headers.get("content-type")).toMatch(/javascript/);
        const script = await res.text();
        expect(script.length).toBeGreaterThan(100_000);
        expect(script).toMatch(/createApiReference/);
      });
    });
  });
}
