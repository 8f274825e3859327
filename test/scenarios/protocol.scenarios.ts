/**
 * Protocol-level scenarios (docs/api.md#lists-and-pagination, #request-bodies-and-text, #errors): the Error object for unknown routes
 * and wrong methods, malformed JSON, wrong media types, oversized bodies, bad
 * path ids on every documented route, unknown query parameters, bad cursors and
 * X-Request-Id on every response. Written against the Target interface.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, uniqueName, type ApiClient, type ApiResponse } from "../support/client";
import type { Target } from "../support/target";
import { createCategory, expectValidationError, type CategoryBody } from "./categories.scenarios";
import { createPet, type PetBody } from "./pets.scenarios";
import { signUp } from "./accounts.scenarios";

const BAD_IDS = ["1.5", "-1", "abc", "0", "99999999999999999999", "9007199254740992", "1e3", "0x10", "%20"];

/** Assert the Error object of docs/api.md#errors with the given status and code. */
function expectError(res: ApiResponse, status: number, code: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body).toMatchObject({ code, status, message: expect.any(String) });
  expect(res.body.message).not.toMatch(/\n\s+at /); // no stack trace
}

/** Register the protocol scenarios against the target `getTarget()` returns. */
export function protocolScenarios(getTarget: () => Target): void {
  describe("protocol", () => {
    let api: ApiClient;
    let key: string;
    let category: CategoryBody;
    let pet: PetBody;
    let document: { paths: Record<string, Record<string, unknown>> };

    beforeAll(async () => {
      api = await connect(getTarget());
      key = getTarget().staffKey;
      category = await createCategory(api, key);
      pet = await createPet(api, key, category.id);
      document = (await api.get("/openapi.json")).body;
    });

    describe("unknown routes and methods", () => {
      it.each([
        ["GET", "/nope"],
        ["POST", "/nope/deeper"],
        ["GET", "/pets/1/extra"],
        ["GET", "/pets/"],
        ["GET", "/categories/"],
        ["GET", "/PETS"],
        ["DELETE", "/"],
      ])("%s %s → 404 not_found", async (method, path) => {
        expectError(await api.request(method, path, undefined, { key }), 404, "not_found");
      });

      it.each([
        ["DELETE", "/pets", ["GET", "POST"]],
        ["PUT", "/pets", ["GET", "POST"]],
        ["POST", "/pets/{pet}", ["GET", "PUT", "PATCH", "DELETE"]],
        ["PUT", "/categories/{category}", ["GET", "PATCH", "DELETE"]],
        ["PATCH", "/categories", ["GET", "POST"]],
        ["POST", "/store/inventory", ["GET"]],
        ["POST", "/health", ["GET"]],
        ["DELETE", "/openapi.json", ["GET"]],
      ])("%s %s → 405 method_not_allowed with Allow", async (method, template, allowed) => {
        const path = template.replace("{pet}", String(pet.id)).replace("{category}", String(category.id));
        const res = await api.request(method, path, method === "GET" || method === "DELETE" ? undefined : {}, { key });
        expectError(res, 405, "method_not_allowed");
        const allow = res.headers.get("allow")!.split(/,\s*/);
        expect(allow).toEqual(expect.arrayContaining(allowed));
        expect(allow).not.toContain(method);
        if (allowed.includes("GET")) expect(allow).toContain("HEAD");
      });
    });

    describe("validation messages (one voice)", () => {
      it("every detail names its field and what is allowed — never Zod's own wording", async () => {
        const body = (method: string, path: string, value: unknown) =>
          api.request(method, path, undefined, { key, rawBody: JSON.stringify(value), headers: { "Content-Type": "application/json" } });
        const cases: [Promise<ApiResponse>, string, RegExp][] = [
          [api.get("/pets?statu=available"), "query.statu", /^Unknown parameter; allowed: status, categoryId, id, limit, cursor\.$/],
          [api.get("/categories?x=1"), "query.x", /^Unknown parameter; allowed: limit, cursor\.$/],
          [api.get("/pets?status=lost"), "query.status", /^status must be one of: "available", "pending", "sold"\.$/],
          [body("POST", "/store/orders", { petId: pet.id }), "body.quantity", /^quantity is required \(a number\)\.$/],
          [body("POST", "/store/orders", { petId: String(pet.id), quantity: 1 }), "body.petId", /^petId must be a number, not string\.$/],
          [body("POST", "/store/orders", { petId: pet.id, quantity: 1.5 }), "body.quantity", /^quantity must be an integer\.$/],
          [body("POST", "/pets", { name: "", categoryId: category.id }), "body.name", /^name must not be empty\.$/],
          [
            body("POST", "/pets", { name: "Rex", categoryId: category.id, colour: "red" }),
            "body.colour",
            /^Unknown field; allowed: name, categoryId, status\.$/,
          ],
          [body("POST", "/categories", { name: "x".repeat(500) }), "body.name", /^name must be at most \d+ characters long\.$/],
          [body("PUT", `/store/inventory/${pet.id}`, { quantity: -1 }), "body.quantity", /^quantity must be at least 0\.$/],
          [body("POST", "/accounts", { name: "Ada", email: "not-an-address" }), "body.email", /^email must be an email address\.$/],
          [
            body("POST", "/webhooks", { url: "https://example.com/h", events: ["pet.eaten"] }),
            "body.events[0]".replace("[0]", ".0"),
            /^events\[0\] must be one of: "pet\.created", .*"\*"\.$/,
          ],
        ];
        for (const [pending, path, message] of cases) {
          const res = await pending;
          expect(res.status, path).toBe(400);
          expect(res.body.code).toBe("validation_error");
          const detail = (res.body.details as { path: string; message: string }[]).find((d) => d.path === path);
          expect(detail, `${path} in ${JSON.stringify(res.body.details)}`).toBeDefined();
          expect(detail!.message, path).toMatch(message);
          expect(detail!.message).not.toMatch(/Invalid input|expected \w+, received|Unrecognized key/);
        }
      });
    });

    describe("request bodies", () => {
      const writes = (): [string, string][] => [
        ["POST", "/pets"],
        ["PUT", `/pets/${pet.id}`],
        ["PATCH", `/pets/${pet.id}`],
        ["POST", "/categories"],
        ["PATCH", `/categories/${category.id}`],
      ];

      it.each(['{"name": "Rex",', "{name: 'Rex'}", '{"name": "Rex", "categoryId": 1,}', "not json", "{", '"unterminated'])(
        "malformed JSON %j → 400 invalid_json on every write",
        async (raw) => {
          for (const [method, path] of writes()) {
            const res = await api.request(method, path, undefined, { key, rawBody: raw, headers: { "Content-Type": "application/json" } });
            expectError(res, 400, "invalid_json");
          }
          expect((await api.get(`/pets?id=${pet.id}`)).body).toEqual([pet]);
        },
      );

      it.each(["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/xml", "text/json"])(
        "a body of type %s → 415 unsupported_media_type on every write",
        async (type) => {
          for (const [method, path] of writes()) {
            const res = await api.request(method, path, undefined, { key, rawBody: '{"name":"x","categoryId":1}', headers: { "Content-Type": type } });
            expectError(res, 415, "unsupported_media_type");
          }
        },
      );

      it("a body without Content-Type → 415 unsupported_media_type", async () => {
        const res = await getTarget().fetch("/categories", {
          method: "POST",
          headers: { Authorization: `Bearer ${key}` },
          body: new TextEncoder().encode(JSON.stringify({ name: uniqueName("untyped") })),
        });
        expect(res.status).toBe(415);
        expect(await res.json()).toMatchObject({ code: "unsupported_media_type", status: 415 });
      });

      it.each([
        "application/merge-patch+json",
        "application/json-patch+json",
        "application/vnd.api+json",
        "application/json; charset=latin1",
        "application/json; charset=iso-8859-1",
        "application/json; charset=utf-8; profile=x",
        "application/json; foo=bar",
      ])("a body of type %s → 415 unsupported_media_type on every write (docs/api.md#request-bodies-and-text: exact media type)", async (type) => {
        for (const [method, path] of writes()) {
          const res = await api.request(method, path, undefined, { key, rawBody: '{"name":"x","categoryId":1}', headers: { "Content-Type": type } });
          expectError(res, 415, "unsupported_media_type");
        }
        expect((await api.get(`/pets?id=${pet.id}`)).body).toEqual([pet]);
      });

      it.each(["Application/JSON", 'application/json;charset="UTF-8"', "application/json; Charset=utf-8"])(
        "accepts %s (RFC 9110: media type and parameter case-insensitive)",
        async (type) => {
          const name = uniqueName("Media");
          const res = await api.request("POST", "/categories", undefined, { key, rawBody: JSON.stringify({ name }), headers: { "Content-Type": type } });
          expect(res.status, JSON.stringify(res.body)).toBe(201);
          expect(res.body.name).toBe(name);
        },
      );

      it("invalid UTF-8 → 400 invalid_json (never stored as U+FFFD), on every write", async () => {
        for (const [method, path] of writes()) {
          const prefix = new TextEncoder().encode('{"name":"Bad ');
          const suffix = new TextEncoder().encode(`${uniqueName("utf8")}"}`);
          const body = new Uint8Array([...prefix, 0xff, 0xfe, 0xc3, ...suffix]);
          const res = await getTarget().fetch(path, { method, headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" }, body });
          expect(res.status, `${method} ${path}`).toBe(400);
          expect(await res.json()).toMatchObject({ code: "invalid_json", status: 400 });
        }
        expect((await api.get(`/pets?id=${pet.id}`)).body).toEqual([pet]);
      });

      it.each(['{"name":"Dup","name":"Dup2"}', '{"name":"Nested","categoryId":1,"tags":[{"a":1,"a":2}]}', '{"name":"Escaped","n\\u0061me":"x"}'])(
        "duplicate member names %s → 400 invalid_json (the last one never silently wins)",
        async (raw) => {
          for (const [method, path] of writes()) {
            const res = await api.request(method, path, undefined, { key, rawBody: raw, headers: { "Content-Type": "application/json" } });
            expectError(res, 400, "invalid_json");
          }
          const order = await api.request("POST", "/store/orders", undefined, {
            key,
            rawBody: `{"petId":${pet.id},"quantity":1,"quantity":2}`,
            headers: { "Content-Type": "application/json" },
          });
          expectError(order, 400, "invalid_json");
          expect((await api.get(`/pets?id=${pet.id}`)).body).toEqual([pet]);
        },
      );

      it("authorisation comes first: without a key a bad body is 401, with a customer key on a staff route 403", async () => {
        const raw = '{"name":"a","name":"b"}';
        const anonymous = await api.request("POST", "/categories", undefined, { rawBody: raw, headers: { "Content-Type": "application/merge-patch+json" } });
        expectError(anonymous, 401, "unauthorized");
        const customer = (await signUp(api)).apiKey.key;
        expectError(
          await api.request("POST", "/categories", undefined, { key: customer, rawBody: raw, headers: { "Content-Type": "application/json" } }),
          403,
          "forbidden",
        );
        expectError(await api.request("POST", "/nowhere", undefined, { key, rawBody: raw, headers: { "Content-Type": "application/json" } }), 404, "not_found");
      });

      it("accepts application/json with a charset parameter", async () => {
        const name = uniqueName("Charset Ä");
        const res = await api.request("POST", "/categories", undefined, {
          key,
          rawBody: JSON.stringify({ name }),
          headers: { "Content-Type": "application/json; charset=utf-8" },
        });
        expect(res.status).toBe(201);
        expect(res.body.name).toBe(name);
      });

      it("a body over 64 KiB → 413 payload_too_large; just under is judged on its content", async () => {
        const over = JSON.stringify({ name: "x".repeat(64 * 1024), categoryId: category.id });
        for (const [method, path] of writes()) {
          const res = await api.request(method, path, undefined, { key, rawBody: over, headers: { "Content-Type": "application/json" } });
          expectError(res, 413, "payload_too_large");
        }
        const under = JSON.stringify({ name: "x".repeat(64 * 1024 - 100), categoryId: category.id });
        expect(new TextEncoder().encode(under).length).toBeLessThan(64 * 1024);
        expectValidationError(await api.request("POST", "/pets", undefined, { key, rawBody: under, headers: { "Content-Type": "application/json" } }), [
          "body.name",
        ]);
        // Multi-byte text counts in bytes: 22,000 × 3-byte "€" is over the limit.
        const euros = JSON.stringify({ name: "€".repeat(22_000), categoryId: category.id });
        expectError(
          await api.request("POST", "/pets", undefined, { key, rawBody: euros, headers: { "Content-Type": "application/json" } }),
          413,
          "payload_too_large",
        );
      });
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
        ids = { petId: pet.id, categoryId: category.id, orderId: order.body.id, webhookId: webhook.body.id, keyId: apiKey.body.id };
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

    describe("X-Request-Id", () => {
      it("is on every response, and the Error object quotes it", async () => {
        const etag = (await api.get(`/categories/${category.id}`)).headers.get("etag")!;
        const created = await api.post("/categories", { name: uniqueName("rid") }, { key });
        const responses: [string, ApiResponse][] = [
          ["200", await api.get("/pets?limit=1")],
          ["201", created],
          ["204", await api.delete(`/categories/${created.body.id}`, { key })],
          ["304", await api.get(`/categories/${category.id}`, { headers: { "If-None-Match": etag } })],
          ["400", await api.get("/pets/abc")],
          ["400 json", await api.request("POST", "/categories", undefined, { key, rawBody: "{", headers: { "Content-Type": "application/json" } })],
          ["404", await api.get("/nope")],
          ["405", await api.request("DELETE", "/pets", undefined, { key })],
          ["409", await api.post("/categories", { name: category.name }, { key })],
          ["412", await api.patch(`/categories/${category.id}`, { description: "x" }, { key, headers: { "If-Match": '"stale"' } })],
          ["413", await api.request("POST", "/categories", undefined, { key, rawBody: "x".repeat(70_000), headers: { "Content-Type": "application/json" } })],
          ["415", await api.request("POST", "/categories", undefined, { key, rawBody: "x", headers: { "Content-Type": "text/plain" } })],
          ["422", await api.post("/pets", { name: "x", categoryId: 9007199254740991 }, { key })],
          ["HEAD", await api.request("HEAD", "/pets")],
          [
            "OPTIONS",
            await api.request("OPTIONS", "/pets", undefined, { headers: { Origin: "https://example.com", "Access-Control-Request-Method": "POST" } }),
          ],
          ["docs", await api.get("/docs")],
        ];
        const seen = new Set<string>();
        let storable = 0;
        for (const [label, res] of responses) {
          const id = res.headers.get("x-request-id");
          // docs/api.md#conventions: a response the edge may store and replay to everyone (Workers Cache) goes without it.
          if (res.headers.has("cloudflare-cdn-cache-control")) {
            expect(id, label).toBeNull();
            storable += 1;
            continue;
          }
          expect(id, label).toBeTruthy();
          seen.add(id!);
          if (res.status >= 400) expect(res.body.requestId, label).toBe(id);
        }
        expect(seen.size, "a fresh id per request").toBe(responses.length - storable);
      });

      it("JSON bodies, errors included, are application/json; charset=utf-8", async () => {
        for (const res of [await api.get("/pets?limit=1"), await api.get("/nope"), await api.get("/health")]) {
          expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
        }
      });

      it("echoes a well-formed X-Request-Id sent by the client", async () => {
        const res = await api.get("/nope", { headers: { "X-Request-Id": "trace-0123456789abcdef" } });
        expect(res.headers.get("x-request-id")).toBe("trace-0123456789abcdef");
        expect(res.body.requestId).toBe("trace-0123456789abcdef");
        const ok = await api.get("/store/orders?limit=1", { key, headers: { "X-Request-Id": "trace-42" } });
        expect(ok.headers.get("x-request-id")).toBe("trace-42");
      });
    });
  });
}
