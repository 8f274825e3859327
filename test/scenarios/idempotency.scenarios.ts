/**
 * Idempotency-Key on POST /pets and POST /categories, and on the two POSTs
 * whose response carries a secret (POST /accounts/me/keys, POST /webhooks:
 * replayed without it) (docs/api.md#idempotency-key), written
 * against the Target interface so the Node and Worker suites share it.
 * (POST /store/orders claims its key inside its order batch, with the same
 * fingerprint and messages: see order-safe-writes.scenarios.ts.)
 */
import { describe, expect, it } from "vitest";
import { uniqueName } from "../support/client";
import type { Target } from "../support/target";
import { api, key, openStaff } from "../support/cast";
import { requestFingerprint } from "../../src/services/idempotency.service";
import { createCategory, expectValidationError } from "./categories.scenarios";

export function idempotencyScenarios(getTarget: () => Target): void {
  describe("Idempotency-Key on POST /pets and /categories", () => {
    openStaff(getTarget);

    it("replays the first response (body, status, Location) with Idempotent-Replayed: true and creates nothing more", async () => {
      const idem = { "Idempotency-Key": uniqueName("idem") };
      const body = { name: uniqueName("Idempotent") };
      const first = await api.post("/categories", body, { key, headers: idem });
      const again = await api.post("/categories", body, { key, headers: idem });
      expect(first.status).toBe(201);
      expect(first.headers.get("idempotent-replayed")).toBeNull();
      expect(again.status).toBe(201);
      expect(again.headers.get("idempotent-replayed")).toBe("true");
      expect(again.body).toEqual(first.body);
      expect(again.headers.get("location")).toBe(first.headers.get("location"));
      // Without the key the same body is a new request: the name is taken now.
      expect((await api.post("/categories", body, { key })).body.code).toBe("duplicate_name");
    });

    it("the same key with another body is 422 idempotency_key_reused, on any path of the account", async () => {
      const idem = { "Idempotency-Key": uniqueName("idem") };
      const category = await createCategory(api, key);
      expect((await api.post("/pets", { name: "Once", categoryId: category.id }, { key, headers: idem })).status).toBe(201);
      const other = await api.post("/pets", { name: "Twice", categoryId: category.id }, { key, headers: idem });
      expect(other.status).toBe(422);
      expect(other.body.code).toBe("idempotency_key_reused");
      const elsewhere = await api.post("/categories", { name: uniqueName("c") }, { key, headers: idem });
      expect(elsewhere.body.code).toBe("idempotency_key_reused");
    });

    it("one fingerprint rule: the same JSON with other whitespace and key order replays, on /pets and on /store/orders", async () => {
      const category = await createCategory(api, key);
      const petKey = { "Idempotency-Key": uniqueName("idem"), "Content-Type": "application/json" };
      const name = uniqueName("Spaced");
      const first = await api.request("POST", "/pets", undefined, { key, headers: petKey, rawBody: JSON.stringify({ name, categoryId: category.id }) });
      const spaced = `{\n  "categoryId" : ${category.id},\n\t"name": ${JSON.stringify(name)}\n}\n`;
      const again = await api.request("POST", "/pets", undefined, { key, headers: petKey, rawBody: spaced });
      expect(first.status).toBe(201);
      expect([again.status, again.headers.get("idempotent-replayed")], JSON.stringify(again.body)).toEqual([201, "true"]);
      expect(again.body).toEqual(first.body);

      await api.put(`/store/inventory/${first.body.id}`, { quantity: 5 }, { key });
      const orderKey = { "Idempotency-Key": uniqueName("idem"), "Content-Type": "application/json" };
      const order = await api.request("POST", "/store/orders", undefined, {
        key,
        headers: orderKey,
        rawBody: JSON.stringify({ petId: first.body.id, quantity: 1 }),
      });
      const replayed = await api.request("POST", "/store/orders", undefined, {
        key,
        headers: orderKey,
        rawBody: `{ "quantity": 1,  "petId": ${first.body.id} }`,
      });
      expect(order.status).toBe(201);
      expect([replayed.status, replayed.headers.get("idempotent-replayed")], JSON.stringify(replayed.body)).toEqual([201, "true"]);
      expect(replayed.body).toEqual(order.body);
      expect((await api.get(`/store/inventory/${first.body.id}`)).body.quantity).toBe(4);
    });

    it("a replay is the first answer to the byte, with an optional member set or absent (one representation rule)", async () => {
      const category = await createCategory(api, key);
      const pet = (await api.post("/pets", { name: uniqueName("Byte"), categoryId: category.id }, { key })).body;
      await api.put(`/store/inventory/${pet.id}`, { quantity: 5 }, { key });
      const creations: [string, Record<string, unknown>][] = [
        ["/categories", { name: uniqueName("Bare") }],
        ["/categories", { name: uniqueName("Described"), description: "set" }],
        ["/pets", { name: uniqueName("Pet"), categoryId: category.id, status: "pending" }],
        ["/store/orders", { petId: pet.id, quantity: 1 }],
        ["/store/orders", { petId: pet.id, quantity: 1, shipDate: "2030-01-02T03:04:05.000Z" }],
      ];
      for (const [path, body] of creations) {
        const idem = { "Idempotency-Key": uniqueName("idem") };
        const first = await api.post(path, body, { key, headers: idem });
        const again = await api.post(path, body, { key, headers: idem });
        expect([first.status, again.headers.get("idempotent-replayed")]).toEqual([201, "true"]);
        expect(JSON.stringify(again.body), path).toBe(JSON.stringify(first.body));
        expect(JSON.stringify((await api.get(first.headers.get("location")!, { key })).body), path).toBe(JSON.stringify(first.body));
      }
    });

    it("one set of messages: another body is the same 422 on /pets and on /store/orders", async () => {
      const category = await createCategory(api, key);
      const pet = (await api.post("/pets", { name: uniqueName("Msg"), categoryId: category.id }, { key })).body;
      await api.put(`/store/inventory/${pet.id}`, { quantity: 5 }, { key });
      const petKey = { "Idempotency-Key": uniqueName("idem") };
      const orderKey = { "Idempotency-Key": uniqueName("idem") };
      expect((await api.post("/pets", { name: uniqueName("A"), categoryId: category.id }, { key, headers: petKey })).status).toBe(201);
      expect((await api.post("/store/orders", { petId: pet.id, quantity: 1 }, { key, headers: orderKey })).status).toBe(201);
      const pets = await api.post("/pets", { name: uniqueName("B"), categoryId: category.id }, { key, headers: petKey });
      const orders = await api.post("/store/orders", { petId: pet.id, quantity: 2 }, { key, headers: orderKey });
      expect([pets.status, orders.status]).toEqual([422, 422]);
      expect(orders.body).toMatchObject({ code: pets.body.code, message: pets.body.message });
    });

    it("a refused request releases its key: the retry runs again", async () => {
      const idem = { "Idempotency-Key": uniqueName("idem") };
      const taken = await createCategory(api, key);
      const refused = await api.post("/categories", { name: taken.name }, { key, headers: idem });
      expect(refused.status).toBe(409);
      const retried = await api.post("/categories", { name: taken.name }, { key, headers: idem });
      expect(retried.status).toBe(409);
      expect(retried.headers.get("idempotent-replayed")).toBeNull();
    });

    it("keys are per account: another account's identical key is independent", async () => {
      const idem = { "Idempotency-Key": uniqueName("idem") };
      const other = await api.post("/accounts", { name: "Other", email: `${uniqueName("o").replace(/\W+/g, "-")}@example.com` });
      expect(other.status).toBe(201);
      const category = await createCategory(api, key);
      expect((await api.post("/pets", { name: "Mine", categoryId: category.id }, { key, headers: idem })).status).toBe(201);
      // A customer may not create pets: its key gets 403 and is not confused with the staff account's key.
      const forbidden = await api.post("/pets", { name: "Mine", categoryId: category.id }, { key: other.body.apiKey.key, headers: idem });
      expect(forbidden.status).toBe(403);
    });

    it("a write that does not honour Idempotency-Key refuses it: 400 validation_error naming the header, nothing done", async () => {
      const idem = { "Idempotency-Key": uniqueName("idem") };
      const email = `${uniqueName("refused").replace(/\W+/g, "-")}@example.com`;
      const signUp = await api.post("/accounts", { name: "Refused", email }, { headers: idem });
      expectValidationError(signUp, ["header.idempotency-key"]);
      expect((await api.post("/accounts", { name: "Refused", email })).status, "the account was not created").toBe(201);
      const category = await createCategory(api, key);
      const pet = (await api.post("/pets", { name: uniqueName("Kept"), categoryId: category.id }, { key })).body;
      const writes: [string, string, unknown][] = [
        ["PATCH", `/categories/${category.id}`, { description: "changed" }],
        ["PUT", `/pets/${pet.id}`, { name: "Changed", categoryId: category.id }],
        ["PATCH", `/pets/${pet.id}`, { name: "Changed" }],
        ["PUT", `/store/inventory/${pet.id}`, { quantity: 7 }],
        ["DELETE", `/pets/${pet.id}`, undefined],
        ["DELETE", `/categories/${category.id}`, undefined],
      ];
      for (const [method, path, body] of writes) {
        const res = await api.request(method, path, body, { key, headers: idem });
        expectValidationError(res, ["header.idempotency-key"]);
      }
      expect((await api.get(`/pets/${pet.id}`)).body).toEqual(pet);
      expect((await api.get(`/categories/${category.id}`)).body).toEqual(category);
      expect((await api.get(`/store/inventory/${pet.id}`)).body.quantity).toBe(1);
    });

    it("a claim still held by a running request (as one of the previous version leaves it): its key is 409 on every endpoint, and the claim stays its", async () => {
      const db = getTarget().db!;
      const accountId = (await api.get("/accounts/me", { key })).body.id;
      const held = uniqueName("held");
      const category = await createCategory(api, key);
      const pet = (await api.post("/pets", { name: uniqueName("Stock"), categoryId: category.id }, { key })).body;
      await api.put(`/store/inventory/${pet.id}`, { quantity: 5 }, { key });
      // The holder: a POST /categories whose claim is taken but whose response is not stored yet.
      const fingerprint = await requestFingerprint("POST", "/categories", { name: category.name });
      await db.execute({
        sql: `INSERT INTO idempotency_keys (account_id, key, method, path, request_hash, response_status, response_body, response_headers, created_at, claim_token)
              VALUES (?, ?, 'POST', '/categories', ?, 0, '', '{}', ?, 'holder')`,
        args: [accountId, held, fingerprint, new Date().toISOString()],
      });
      const headers = { "Idempotency-Key": held };
      const name = uniqueName("Blocked");
      const attempts: [string, unknown][] = [
        ["/store/orders", { petId: pet.id, quantity: 1 }],
        ["/categories", { name: category.name }],
        ["/pets", { name, categoryId: category.id }],
        ["/accounts/me/keys", { name }],
        ["/webhooks", { url: "https://example.com/hooks/held", events: ["pet.created"] }],
      ];
      for (const [path, body] of attempts) {
        const res = await api.post(path, body, { key, headers });
        expect([path, res.status, res.body.code]).toEqual([path, 409, "concurrent_update"]);
      }
      const row = await db.execute({
        sql: "SELECT claim_token, response_status FROM idempotency_keys WHERE account_id = ? AND key = ?",
        args: [accountId, held],
      });
      expect(row.rows.map((r) => [r.claim_token, r.response_status])).toEqual([["holder", 0]]);
      expect((await api.get(`/store/inventory/${pet.id}`)).body.quantity).toBe(5);
      const made = await db.execute({
        sql: "SELECT (SELECT count(*) FROM pets WHERE name = ?) + (SELECT count(*) FROM api_keys WHERE name = ?)",
        args: [name, name],
      });
      expect(Number(made.rows[0]![0])).toBe(0);
      // The holder stores its response (only its token matches): the same request now replays it.
      const stored = await db.execute({
        sql: "UPDATE idempotency_keys SET response_status = 201, response_body = ?, response_headers = ? WHERE account_id = ? AND key = ? AND claim_token = 'holder'",
        args: [JSON.stringify(category), JSON.stringify({ Location: `/categories/${category.id}` }), accountId, held],
      });
      expect(stored.rowsAffected).toBe(1);
      const replay = await api.post("/categories", { name: category.name }, { key, headers });
      expect([replay.status, replay.headers.get("idempotent-replayed"), replay.body]).toEqual([201, "true", category]);
    });

    it("a response stored by an earlier release still replays: the fingerprint's canonical JSON (sorted keys, JSON escapes) is fixed", async () => {
      const accountId = (await api.get("/accounts/me", { key })).body.id;
      const stored = uniqueName("stored");
      // requestFingerprint("POST", "/categories", body) as the release before it stored it.
      const fingerprint = "b55e9882b28719276fe34ab248d64e7e1e1a74aeed11b38614681b879ae48763";
      const answer = { id: 999_999, name: 'Pinned é\u2028"q"', description: "b\u0001" };
      await getTarget().db!.execute({
        sql: `INSERT INTO idempotency_keys (account_id, key, method, path, request_hash, response_status, response_body, response_headers, created_at, claim_token)
              VALUES (?, ?, 'POST', '/categories', ?, 201, ?, '{}', ?, 'earlier')`,
        args: [accountId, stored, fingerprint, JSON.stringify(answer), new Date().toISOString()],
      });
      const replay = await api.post("/categories", { description: answer.description, name: answer.name }, { key, headers: { "Idempotency-Key": stored } });
      expect([replay.status, replay.headers.get("idempotent-replayed")], JSON.stringify(replay.body)).toEqual([201, "true"]);
      expect(replay.body).toEqual(answer);
    });

    it("a key over 255 characters is 400 validation_error", async () => {
      const res = await api.post("/categories", { name: uniqueName("long") }, { key, headers: { "Idempotency-Key": "k".repeat(256) } });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe("validation_error");
    });
  });

  describe("Idempotency-Key on the POSTs whose response carries a secret", () => {
    openStaff(getTarget);

    it("POST /accounts/me/keys: a replay is 200 with the key created first, without its secret, and creates no other key", async () => {
      const signUp = await api.post("/accounts", { name: "Idem", email: `${uniqueName("idem").replace(/\W+/g, "-")}@example.com` });
      const customer = signUp.body.apiKey.key as string;
      const idem = { "Idempotency-Key": uniqueName("idem") };
      const first = await api.post("/accounts/me/keys", { name: "ci" }, { key: customer, headers: idem });
      expect(first.status).toBe(201);
      expect(first.body.key).toMatch(/^psk_/);
      const again = await api.post("/accounts/me/keys", { name: "ci" }, { key: customer, headers: idem });
      expect([again.status, again.headers.get("idempotent-replayed")], JSON.stringify(again.body)).toEqual([200, "true"]);
      const { key: _secret, ...created } = first.body;
      expect(again.body).toEqual(created);
      expect(again.body).not.toHaveProperty("key");
      expect(JSON.stringify(again.body)).not.toContain(first.body.key);
      const keys = await api.get("/accounts/me/keys", { key: customer });
      expect(keys.body.map((k: { id: number }) => k.id)).toEqual([signUp.body.apiKey.id, first.body.id]);
      const other = await api.post("/accounts/me/keys", { name: "other" }, { key: customer, headers: idem });
      expect([other.status, other.body.code]).toEqual([422, "idempotency_key_reused"]);
    });

    it("POST /webhooks: a replay is 200 with the subscription created first and its Location, without its secret", async () => {
      const idem = { "Idempotency-Key": uniqueName("idem") };
      const body = { url: "https://example.com/hooks/idempotent", events: ["pet.created"] };
      const before = (await api.get("/webhooks?limit=100", { key })).body.length;
      const first = await api.post("/webhooks", body, { key, headers: idem });
      expect(first.status, JSON.stringify(first.body)).toBe(201);
      expect(first.body.secret).toMatch(/^whsec_/);
      const again = await api.post("/webhooks", body, { key, headers: idem });
      expect([again.status, again.headers.get("idempotent-replayed")], JSON.stringify(again.body)).toEqual([200, "true"]);
      const { secret: _secret, ...created } = first.body;
      expect(again.body).toEqual(created);
      expect(JSON.stringify(again.body)).not.toContain(first.body.secret);
      expect(again.headers.get("location")).toBe(first.headers.get("location"));
      expect((await api.get("/webhooks?limit=100", { key })).body).toHaveLength(before + 1);
      await api.request("DELETE", `/webhooks/${first.body.id}`, undefined, { key });
    });
  });
}
