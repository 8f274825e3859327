/**
 * Protocol-level scenarios (docs/api.md#errors, #conventions): the Error object
 * for unknown routes and wrong methods (404, 405 with Allow), validation
 * messages in one voice, X-Request-Id on every response and JSON's media type;
 * and `expectError`, which the other protocol scenarios share (their opener
 * is `openPet` of test/support/cast.ts). Request bodies and query or path
 * parameters are in request-bodies.scenarios.ts and
 * request-parameters.scenarios.ts. Written against the Target interface.
 */
import { describe, expect, it } from "vitest";
import { uniqueName, type ApiResponse } from "../support/client";
import type { Target } from "../support/target";
import { api, key, category, pet, openPet } from "../support/cast";
import { NewPetSchema } from "../../src/routes/pets/pets.schemas";

/** Assert the Error object of docs/api.md#errors with the given status and code. */
export function expectError(res: ApiResponse, status: number, code: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body).toMatchObject({ code, status, message: expect.any(String) });
  expect(res.body.message).not.toMatch(/\n\s+at /); // no stack trace
}

/** Register the protocol scenarios against the target `getTarget()` returns. */
export function protocolScenarios(getTarget: () => Target): void {
  describe("protocol", () => {
    openPet(getTarget);

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
      it("one detail per fault: an id past 2^53 - 1 is refused once, not once per rule", async () => {
        const res = await api.request("POST", "/store/orders", undefined, {
          key,
          rawBody: `{"petId":9007199254740992,"quantity":1}`,
          headers: { "Content-Type": "application/json" },
        });
        expect(res.status).toBe(400);
        expect(res.body.details).toEqual([{ path: "body.petId", message: "petId must be at most 9007199254740991." }]);
      });

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
            // The allowed fields come from the schema: adding an optional field keeps this test true.
            new RegExp(`^Unknown field; allowed: ${Object.keys(NewPetSchema.shape).join(", ")}\\.$`),
          ],
          [body("POST", "/categories", { name: "x".repeat(500) }), "body.name", /^name must be at most \d+ characters long\.$/],
          [body("PUT", `/store/inventory/${pet.id}`, { quantity: -1 }), "body.quantity", /^quantity must be at least 0\.$/],
          [body("POST", "/accounts", { name: "Ada", email: "not-an-address" }), "body.email", /^email must be an email address\.$/],
          [
            body("POST", "/webhooks", { url: "https://example.com/h", events: ["pet.eaten"] }),
            "body.events[0]".replace("[0]", ".0"),
            /^events\[0\] must be one of: "pet\.created", .*"\*"\.$/,
          ],
          [
            api.request("POST", "/pets", undefined, { key, rawBody: `{"name":"Rex","categoryId":1e400}`, headers: { "Content-Type": "application/json" } }),
            "body.categoryId",
            /^categoryId must be a finite number\.$/,
          ],
          [api.get(`/pets?${Array.from({ length: 101 }, (_, i) => `id=${i + 1}`).join("&")}`), "query.id", /^id takes at most 100 values\.$/],
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
