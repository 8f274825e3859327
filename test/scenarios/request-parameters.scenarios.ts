/**
 * Protocol-level scenarios of parameters (docs/api.md#lists-and-pagination, #errors):
 * every operation of the served document refuses unknown query parameters
 * naming the ones it documents, every route with a path id refuses a bad id
 * with 400 (never 500) and accepts 2^53-1, and lists refuse cursors they did
 * not issue. Written against the Target interface.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { uniqueName } from "../support/client";
import type { Target } from "../support/target";
import { api, key, category, pet, openPet } from "../support/cast";
import { expectValidationError } from "./categories.scenarios";
import { createPet } from "./pets.scenarios";
import { expectError } from "./protocol.scenarios";

const BAD_IDS = ["1.5", "-1", "abc", "0", "99999999999999999999", "9007199254740992", "1e3", "0x10", "%20"];

/** Register the query and path parameter scenarios against the target `getTarget()` returns. */
export function requestParametersScenarios(getTarget: () => Target): void {
  describe("protocol", () => {
    openPet(getTarget);
    let document: { paths: Record<string, Record<string, unknown>> };

    beforeAll(async () => {
      document = (await api.get("/openapi.json")).body;
    });

    describe("unknown query parameters (docs/api.md#lists-and-pagination: every operation, including those that take none)", () => {
      const HTTP_METHODS = ["get", "put", "post", "patch", "delete"];
      interface Operation {
        parameters?: { name: string; in: string }[];
        requestBody?: { required?: boolean };
      }
      let ids: Record<string, number>;

      beforeAll(async () => {
        // Real resources of this test, so that a request which wrongly got past validation would act on them.
        await api.put(`/store/inventory/${pet.id}`, { quantity: 5 }, { key });
        const order = await api.post("/store/orders", { petId: pet.id, quantity: 1 }, { key });
        const webhook = await api.post("/webhooks", { url: "http://127.0.0.1:9/hook", events: ["category.deleted"] }, { key });
        const apiKey = await api.post("/accounts/me/keys", { name: "unknown-parameters" }, { key });
        expect([order.status, webhook.status, apiKey.status]).toEqual([201, 201, 201]);
        ids = { petId: pet.id, categoryId: category.id, orderId: order.body.id, webhookId: webhook.body.id, keyId: apiKey.body.id, eventId: 1 };
      });

      afterAll(async () => {
        if (!ids) return;
        await api.delete(`/webhooks/${ids.webhookId}`, { key });
        await api.delete(`/accounts/me/keys/${ids.keyId}`, { key });
      });

      /** A valid body for each documented operation that takes one (keyed "METHOD /path/template"). */
      const bodies = (): Record<string, unknown> => ({
        "POST /pets": { name: uniqueName("Strict"), categoryId: category.id },
        "PUT /pets/{petId}": { name: pet.name, categoryId: category.id },
        "PATCH /pets/{petId}": { name: pet.name },
        "POST /categories": { name: uniqueName("Strict") },
        "PATCH /categories/{categoryId}": { name: category.name },
        "PUT /store/inventory/{petId}": { quantity: 5 },
        "POST /store/orders": { petId: pet.id, quantity: 1 },
        "PATCH /store/orders/{orderId}": { complete: true },
        "POST /accounts": { name: "Strict", email: `${uniqueName("strict").replace(/\W/g, "")}@example.com` },
        "POST /accounts/me/keys": { name: "strict" },
        "POST /webhooks": { url: "http://127.0.0.1:9/hook", events: ["category.deleted"] },
        "PATCH /webhooks/{webhookId}": { enabled: true },
        "POST /webhooks/{webhookId}/recover": { since: "2026-01-01T00:00:00Z" },
      });

      it("every operation of the served document answers 400 validation_error naming exactly the parameters it documents", async () => {
        const served = (await api.get("/openapi.json")).body as { paths: Record<string, Record<string, Operation>> };
        const samples = bodies();
        let checked = 0;
        for (const [template, item] of Object.entries(served.paths)) {
          for (const method of Object.keys(item).filter((m) => HTTP_METHODS.includes(m))) {
            const operation = item[method]!;
            const label = `${method.toUpperCase()} ${template}`;
            const path = template.replace(/\{([^}]+)\}/g, (_, name: string) => {
              expect(ids[name], `an id for {${name}} of ${label}`).toBeDefined();
              return String(ids[name]);
            });
            const body = samples[label];
            if (operation.requestBody?.required) expect(body, `a sample body for ${label}`).toBeDefined();
            const allowed = (operation.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name);
            for (const query of ["unknownParam=1", allowed.length > 0 ? `${allowed[0]}s=1` : "limit=1"]) {
              const res = await api.request(method.toUpperCase(), `${path}?${query}`, body, { key });
              expect(res.status, `${label}?${query}: ${JSON.stringify(res.body)}`).toBe(400);
              expect(res.body.code).toBe("validation_error");
              const name = query.split("=")[0]!;
              expect(res.body.details, label).toContainEqual({
                path: `query.${name}`,
                message: `Unknown parameter; allowed: ${allowed.length > 0 ? allowed.join(", ") : "none"}.`,
              });
            }
            checked += 1;
          }
        }
        expect(checked).toBeGreaterThanOrEqual(33);
        // Nothing was acted on: the pet, the category and the key are as they were.
        expect((await api.get(`/pets?id=${pet.id}`)).body).toEqual([pet]);
        expect((await api.get(`/categories/${category.id}`)).body).toEqual(category);
        expect((await api.get("/accounts/me/keys?limit=100", { key })).body.map((k: { id: number }) => k.id)).toContain(ids.keyId);
      });
    });

    describe("path ids", () => {
      it("every documented route with a path id answers 400 validation_error (never 500) for a bad id", async () => {
        let checked = 0;
        for (const [template, item] of Object.entries(document.paths)) {
          const params = [...template.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
          if (params.length === 0) continue;
          for (const method of Object.keys(item).filter((m) => ["get", "put", "patch", "delete", "post"].includes(m))) {
            for (const bad of BAD_IDS) {
              const path = params.reduce((p, name) => p.replace(`{${name}}`, bad), template);
              const body = method === "get" || method === "delete" ? undefined : {};
              const res = await api.request(method.toUpperCase(), path, body, { key });
              expect(res.status, `${method.toUpperCase()} ${path}: ${JSON.stringify(res.body)}`).toBe(400);
              expect(res.body.code).toBe("validation_error");
              expect(res.body.details.map((d: { path: string }) => d.path)).toContain(`path.${params[0]}`);
              checked += 1;
            }
          }
        }
        expect(checked).toBeGreaterThanOrEqual(9 * BAD_IDS.length);
      });

      it("accepts the largest id, 2^53-1, as a valid id (404, not 400)", async () => {
        for (const path of ["/pets/9007199254740991", "/categories/9007199254740991", "/store/inventory/9007199254740991"]) {
          expectError(await api.get(path), 404, "not_found");
        }
      });
    });

    describe("query strings", () => {
      it.each([
        ["GET", "/pets?colour=brown", "query.colour"],
        ["GET", "/pets?Status=available", "query.Status"],
        ["GET", "/pets?page=2", "query.page"],
        ["GET", "/categories?offset=10", "query.offset"],
        ["GET", "/store/inventory?sort=petId", "query.sort"],
        ["GET", "/pets/{pet}?fields=name", "query.fields"],
        ["GET", "/categories/{category}?expand=pets", "query.expand"],
        ["GET", "/store/inventory/{pet}?x=1", "query.x"],
        ["DELETE", "/pets/{pet}?force=true", "query.force"],
        ["DELETE", "/categories/{category}?cascade=true", "query.cascade"],
      ])("%s %s → 400 validation_error naming the unknown parameter", async (method, template, detail) => {
        const path = template.replace("{pet}", String(pet.id)).replace("{category}", String(category.id));
        expectValidationError(await api.request(method, path, undefined, { key }), [detail]);
        expect((await api.get(`/pets?id=${pet.id}`)).body).toEqual([pet]);
        expect((await api.get(`/categories/${category.id}`)).status).toBe(200);
      });

      it("rejects a cursor this API did not issue with 400 validation_error on every list", async () => {
        const cursors = ["garbage", "YWZ0ZXI6MA", "YWZ0ZXI6LTE", btoa("after:abc"), btoa("before:5"), "a".repeat(201), "%00"];
        for (const list of ["/pets", "/categories", "/store/inventory"]) {
          for (const cursor of cursors) {
            const res = await api.get(`${list}?cursor=${cursor}`);
            expect(res.status, `${list} cursor=${cursor}`).toBe(400);
            expect(res.body.code).toBe("validation_error");
            expect(res.body.details[0].path).toBe("query.cursor");
          }
        }
      });

      it("accepts the cursor of a Link header", async () => {
        await createPet(api, key, category.id);
        const first = await api.get(`/pets?categoryId=${category.id}&limit=1`);
        const next = /^<([^>]+)>; rel="next"$/.exec(first.headers.get("link")!)![1]!;
        const second = await api.get(next);
        expect(second.status).toBe(200);
        expect(second.body[0].id).toBeGreaterThan(first.body[0].id);
      });
    });
  });
}
