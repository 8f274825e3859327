/**
 * The authorisation matrix (issue 3, docs/api.md#authorisation): for EVERY operation of the
 * served /openapi.json, one test calls it with no key, malformed keys, a
 * well-formed unknown key, a revoked key, a customer key and a staff key, and
 * asserts exactly what its `security` marks and `x-roles` say:
 *
 * - public (`security: []`): never 401/403, whatever key is sent;
 * - protected (`security: [{bearerAuth: []}]`): 401 `unauthorized` with
 *   `WWW-Authenticate: Bearer realm="petstore"` (RFC 6750 §3) for a missing,
 *   malformed, unknown or revoked key; 403 `forbidden` for a role not in
 *   `x-roles`; neither 401 nor 403 for a role in `x-roles`.
 *
 * The operations are enumerated from the served document at collection time,
 * so a new route is in the matrix as soon as it is in the document; a second
 * test checks that every route the app serves IS in the document (so a route
 * cannot escape by being undocumented). Path parameters are filled with
 * existing ids (or a syntactically valid one), bodies are generated from the
 * request schema; the outcome asserted is the auth outcome only (every
 * response is also checked against the document by the ApiClient).
 */
import SwaggerParser from "@apidevtools/swagger-parser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROLES, type Role } from "../../src/domain/principal";
import { connect, uniqueName, type ApiClient, type ApiResponse } from "../support/client";
import { nodeTarget } from "../support/node-target";
import { STAFF_ONLY } from "../support/staff-only";
import { uniqueEmail, type NewApiKeyBody, type SignUpBody } from "../scenarios/accounts.scenarios";

type Schema = {
  type?: string;
  format?: string;
  enum?: unknown[];
  example?: unknown;
  minimum?: number;
  minLength?: number;
  minItems?: number;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  allOf?: Schema[];
  oneOf?: Schema[];
  anyOf?: Schema[];
};
type Operation = {
  operationId?: string;
  security?: Record<string, string[]>[];
  "x-roles"?: Role[];
  parameters?: { name: string; in: string; required?: boolean; schema?: Schema }[];
  requestBody?: { required?: boolean; content: Record<string, { schema: Schema }> };
  responses: Record<string, unknown>;
};
type Document = {
  paths: Record<string, Record<string, Operation>>;
  components?: { securitySchemes?: Record<string, unknown> };
};

const METHODS = ["get", "put", "post", "delete", "patch", "head", "options", "trace"];
/** Routes served on purpose without being operations of the document. */
const UNDOCUMENTED_ROUTES = ["GET /docs/assets/scalar.js"];
/** Operations left out of the matrix, with why. Must stay exactly this list. */
const SKIPPED: Record<string, string> = {};

const target = await nodeTarget();
const served = (await (await target.fetch("/openapi.json")).json()) as Document;
const document = (await SwaggerParser.dereference(structuredClone(served) as never)) as unknown as Document;
const operations = Object.entries(document.paths).flatMap(([path, item]) =>
  Object.entries(item)
    .filter(([method]) => METHODS.includes(method))
    .map(([method, op]) => ({ method: method.toUpperCase(), path, op, id: `${method.toUpperCase()} ${path}` })),
);

afterAll(async () => {
  await target.close();
});

/** Fixture ids by path-parameter name; anything else gets the syntactically valid id 1. */
const ids: Record<string, number> = {};
let api: ApiClient;
let customerKey: string;
let revokedKey: string;

beforeAll(async () => {
  api = await connect(target);
  const staff = { key: target.staffKey };
  const category = await api.post("/categories", { name: uniqueName("Matrix category") }, staff);
  expect(category.status, JSON.stringify(category.body)).toBe(201);
  ids.categoryId = category.body.id;
  const pet = await api.post("/pets", { name: uniqueName("Matrix pet"), categoryId: category.body.id }, staff);
  expect(pet.status, JSON.stringify(pet.body)).toBe(201);
  ids.petId = pet.body.id;

  const customer = await api.post<SignUpBody>("/accounts", { name: "Matrix customer", email: uniqueEmail("matrix") });
  expect(customer.status).toBe(201);
  customerKey = customer.body.apiKey.key;

  // Someone else's key: path target of DELETE /accounts/me/keys/{keyId}, never the caller's own.
  const victim = await api.post<SignUpBody>("/accounts", { name: "Matrix bystander", email: uniqueEmail("bystander") });
  ids.keyId = victim.body.apiKey.id;

  const doomed = await api.post<NewApiKeyBody>("/accounts/me/keys", { name: "doomed" }, { key: customerKey });
  expect(doomed.status).toBe(201);
  revokedKey = doomed.body.key;
  expect((await api.delete(`/accounts/me/keys/${doomed.body.id}`, { key: customerKey })).status).toBe(204);
});

/** A minimal value that looks valid for `schema` (examples first; unique emails). */
function sample(schema: Schema | undefined, name = ""): unknown {
  if (!schema) return {};
  const variant = schema.allOf?.[0] ?? schema.oneOf?.[0] ?? schema.anyOf?.[0];
  if (variant) return sample({ ...variant, ...schema, allOf: undefined, oneOf: undefined, anyOf: undefined }, name);
  if (schema.format === "email" || /email/i.test(name)) return uniqueEmail("matrix");
  if (schema.type === "object" || schema.properties) {
    const properties = schema.properties ?? {};
    const names = schema.required?.length ? schema.required : Object.keys(properties).slice(0, 1);
    return Object.fromEntries(names.map((n) => [n, sample(properties[n], n)]));
  }
  if (schema.example !== undefined) return name in ids ? ids[name] : schema.example;
  if (schema.enum?.length) return schema.enum[0];
  switch (schema.type) {
    case "integer":
    case "number":
      return ids[name] ?? schema.minimum ?? 1;
    case "boolean":
      return true;
    case "array":
      return Array.from({ length: Math.max(1, schema.minItems ?? 1) }, () => sample(schema.items, name));
    case "string":
      if (schema.format === "date-time") return new Date().toISOString();
      if (schema.format === "uri" || schema.format === "url" || /url/i.test(name)) return "https://example.com/hook";
      return "x".repeat(Math.max(1, schema.minLength ?? 1));
    default:
      return {};
  }
}

/** The concrete path of an operation, with its path parameters filled in. */
function concretePath(path: string): string {
  return path.replace(/\{([^}]+)\}/g, (_, name: string) => String(ids[name] ?? 1));
}

/** Send one request of the matrix with `authorization` as the raw header (undefined: none). */
async function call(method: string, path: string, op: Operation, authorization?: string): Promise<ApiResponse> {
  const headers: Record<string, string> = {};
  if (authorization !== undefined) headers.Authorization = authorization;
  const content = op.requestBody?.content["application/json"];
  const body = content ? sample(content.schema) : undefined;
  const res = await api.request(method, concretePath(path), body, { headers });
  if (res.status === 201) learnIds(res.headers.get("location"));
  return res;
}

/** Record the ids of a created resource (`Location: /store/orders/7` → orderId 7) for later operations. */
function learnIds(location: string | null): void {
  if (!location) return;
  const bare = new URL(location, "http://x").pathname;
  for (const template of Object.keys(document.paths)) {
    const names = [...template.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
    const match = new RegExp(`^${template.replace(/\{[^}]+\}/g, "([1-9][0-9]*)")}$`).exec(bare);
    if (!match) continue;
    for (const [i, name] of names.entries()) ids[name] ??= Number(match[i + 1]);
  }
}

/** Creations first, then reads and updates, deletions last: later operations find what earlier ones made. */
const PHASE: Record<string, number> = { POST: 0, DELETE: 2 };

const RANDOM_KEY = `psk_${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url")}`;
/** Credentials that must never authenticate, each with the exact challenge a protected route answers. */
const BAD_CREDENTIALS: { label: string; header: () => string | undefined; challenge: RegExp }[] = [
  { label: "no key", header: () => undefined, challenge: /^Bearer realm="petstore"$/ },
  // RFC 6750 §3.1: another auth scheme is "no authentication information": no error code.
  { label: "another scheme (Basic)", header: () => `Basic ${btoa("user:pass")}`, challenge: /^Bearer realm="petstore"$/ },
  { label: "empty bearer", header: () => "Bearer ", challenge: /^Bearer realm="petstore"(, error="invalid_token")?$/ },
  { label: "malformed key", header: () => "Bearer not-a-key", challenge: /^Bearer realm="petstore", error="invalid_token"$/ },
  { label: "key with a bad character", header: () => `Bearer ${customerKey.slice(0, -1)}!`, challenge: /^Bearer realm="petstore", error="invalid_token"$/ },
  { label: "well-formed unknown key", header: () => `Bearer ${RANDOM_KEY}`, challenge: /^Bearer realm="petstore", error="invalid_token"$/ },
  { label: "revoked key", header: () => `Bearer ${revokedKey}`, challenge: /^Bearer realm="petstore", error="invalid_token"$/ },
];

describe("the served document declares security consistently", () => {
  it("has the bearerAuth scheme (http, bearer)", () => {
    expect(served.components?.securitySchemes?.bearerAuth).toMatchObject({ type: "http", scheme: "bearer" });
  });

  it("enumerates a plausible set of operations and skips exactly the listed ones", () => {
    expect(operations.length).toBeGreaterThanOrEqual(20);
    const skipped = operations.filter((o) => o.id in SKIPPED).map((o) => o.id);
    expect(skipped.sort()).toEqual(Object.keys(SKIPPED).sort());
  });

  it("serves no route that the document leaves out (a route cannot escape the matrix)", () => {
    const documented = new Set(operations.map((o) => o.id));
    const servedRoutes = new Set(
      target.app.routes.filter((r) => r.method !== "ALL" && !r.path.includes("*")).map((r) => `${r.method} ${r.path.replace(/:([A-Za-z0-9_]+)/g, "{$1}")}`),
    );
    const undocumented = [...servedRoutes].filter((r) => !documented.has(r)).sort();
    expect(undocumented).toEqual([...UNDOCUMENTED_ROUTES].sort());
    for (const id of documented) expect(servedRoutes.has(id), `${id} is documented but not served`).toBe(true);
  });

  it("the staff-only operations are exactly STAFF_ONLY (test/support/staff-only.ts)", () => {
    const staffOnly = operations.filter(({ op }) => JSON.stringify(op["x-roles"]) === '["staff"]').map((o) => o.id);
    expect(staffOnly.sort()).toEqual([...STAFF_ONLY].sort());
  });

  it.each(operations.map((o) => [o.id, o] as const))("%s: marks, roles and documented 401/403/429", (_, { op }) => {
    expect(op.security, "every operation states its security explicitly").toBeDefined();
    // Every request passes the global rate limiter, so every operation can answer 429.
    expect(Object.keys(op.responses)).toContain("429");
    if (op.security!.length === 0) {
      expect(op["x-roles"]).toBeUndefined();
      return;
    }
    expect(op.security).toEqual([{ bearerAuth: [] }]);
    const roles = op["x-roles"] ?? [];
    expect(roles.length).toBeGreaterThan(0);
    for (const role of roles) expect(ROLES).toContain(role);
    expect(Object.keys(op.responses)).toContain("401");
    if (ROLES.some((r) => !roles.includes(r))) expect(Object.keys(op.responses)).toContain("403");
  });
});

describe("authorisation matrix (every operation × every kind of caller)", () => {
  const tested = operations.filter((o) => !(o.id in SKIPPED)).sort((a, b) => (PHASE[a.method] ?? 1) - (PHASE[b.method] ?? 1));

  it.each(tested.map((o) => [o.id, o] as const))("%s", async (_, { method, path, op }) => {
    const isPublic = Array.isArray(op.security) && op.security.length === 0;
    const roles = op["x-roles"] ?? [];
    const keys: Record<Role, string> = { customer: customerKey, staff: target.staffKey };

    for (const bad of BAD_CREDENTIALS) {
      const res = await call(method, path, op, bad.header());
      const where = `${method} ${path} with ${bad.label} → ${res.status} ${JSON.stringify(res.body)}`;
      if (isPublic) {
        expect([401, 403], where).not.toContain(res.status);
      } else {
        expect(res.status, where).toBe(401);
        expect(res.body.code, where).toBe("unauthorized");
        expect(res.headers.get("www-authenticate"), where).toMatch(bad.challenge);
      }
    }

    for (const role of ROLES) {
      const res = await call(method, path, op, `Bearer ${keys[role]}`);
      const where = `${method} ${path} as ${role} → ${res.status} ${JSON.stringify(res.body)}`;
      if (isPublic || roles.includes(role)) {
        expect([401, 403], where).not.toContain(res.status);
      } else {
        expect(res.status, where).toBe(403);
        expect(res.body.code, where).toBe("forbidden");
      }
    }
  });
});
