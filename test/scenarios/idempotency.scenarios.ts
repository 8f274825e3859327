/**
 * Idempotency-Key on POST /pets and POST /categories (API.md §4), written
 * against the Target interface so the Node and Worker suites share it.
 * (POST /store/orders has its own, atomic handling: see orders.scenarios.ts.)
 */
import { beforeAll, describe, expect, it } from "vitest";
import { connect, uniqueName, type ApiClient } from "../support/client";
import type { Target } from "../support/target";
import { createCategory } from "./categories.scenarios";

export function idempotencyScenarios(getTarget: () => Target): void {
  describe("Idempotency-Key on POST /pets and /categories", () => {
    let api: ApiClient;
    let key: string;

    beforeAll(async () => {
      api = await connect(getTarget());
      key = getTarget().staffKey;
    });

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

    it("a key over 255 characters is 400 validation_error", async () => {
      const res = await api.post("/categories", { name: uniqueName("long") }, { key, headers: { "Idempotency-Key": "k".repeat(256) } });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe("validation_error");
    });
  });
}
