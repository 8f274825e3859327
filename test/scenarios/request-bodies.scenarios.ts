/**
 * Protocol-level scenarios of request bodies (docs/api.md#request-bodies-and-text, #limits):
 * on every write, malformed JSON, invalid UTF-8 and duplicate member names are
 * 400 invalid_json, any media type but application/json (charset utf-8) is 415,
 * a body over 64 KiB is 413 — and authorisation is judged before the body.
 * Written against the Target interface.
 */
import { describe, expect, it } from "vitest";
import { uniqueName } from "../support/client";
import type { Target } from "../support/target";
import { api, key, category, pet, openPet } from "../support/cast";
import { signUp } from "./accounts.scenarios";
import { expectValidationError } from "./categories.scenarios";
import { expectError } from "./protocol.scenarios";

/** Register the request-body scenarios against the target `getTarget()` returns. */
export function requestBodiesScenarios(getTarget: () => Target): void {
  describe("protocol", () => {
    openPet(getTarget);

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
        // PATCH takes a JSON Merge Patch as such (docs/api.md#patch-is-a-json-merge-patch).
        const refused = writes().filter(([method]) => !(method === "PATCH" && type === "application/merge-patch+json"));
        expect(refused.length).toBeGreaterThan(0);
        for (const [method, path] of refused) {
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
  });
}
