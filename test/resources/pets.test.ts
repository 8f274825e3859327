/**
 * Runs the POST /pets scenarios against the Node app, plus Node-only checks that need
 * configuration, an injected clock or direct database rows (docs/api.md#stock-and-ordering, #caching).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, uniqueName, type ApiClient } from "../support/client";
import { nodeTarget, type NodeTarget } from "../support/node-target";
import { createCategory } from "../scenarios/categories.scenarios";
import { createPet, petsScenarios } from "../scenarios/pets.scenarios";

let target: NodeTarget;
beforeAll(async () => {
  target = await nodeTarget();
});
afterAll(async () => {
  await target?.close();
});

petsScenarios(() => target);

describe("pets (Node only)", () => {
  describe("GET /pets/{petId} after its sunset", () => {
    const SUNSET = "2026-01-01T00:00:00Z";
    const DEPRECATED = "2025-07-01T00:00:00Z";
    let now = new Date("2025-12-31T23:59:59.999Z");
    let sunsetTarget: NodeTarget;
    let api: ApiClient;

    beforeAll(async () => {
      sunsetTarget = await nodeTarget({ PETS_GET_SUNSET: SUNSET, PETS_GET_DEPRECATED: DEPRECATED }, { clock: () => now });
      api = await connect(sunsetTarget);
    });
    afterAll(async () => {
      await sunsetTarget?.close();
    });

    it("documents the configured sunset as x-sunset", async () => {
      const operation = (await api.get("/openapi.json")).body.paths["/pets/{petId}"].get;
      expect(operation.deprecated).toBe(true);
      expect(Date.parse(operation["x-sunset"])).toBe(Date.parse(SUNSET));
    });

    it("serves until the sunset instant, then answers 410 endpoint_sunset with the same headers", async () => {
      const key = sunsetTarget.staffKey;
      const category = await createCategory(api, key);
      const pet = await createPet(api, key, category.id);

      now = new Date(Date.parse(SUNSET) - 1);
      const before = await api.get(`/pets/${pet.id}`);
      expect(before.status).toBe(200);
      expect(before.headers.get("deprecation")).toBe(`@${Date.parse(DEPRECATED) / 1000}`);
      expect(before.headers.get("sunset")).toBe("Thu, 01 Jan 2026 00:00:00 GMT");

      now = new Date(SUNSET);
      const after = await api.get(`/pets/${pet.id}`);
      expect(after.status).toBe(410);
      expect(after.body.code).toBe("endpoint_sunset");
      expect(after.headers.get("deprecation")).toBe(`@${Date.parse(DEPRECATED) / 1000}`);
      expect(after.headers.get("sunset")).toBe("Thu, 01 Jan 2026 00:00:00 GMT");
      expect(after.headers.get("link")).toBe(`</pets?id=${pet.id}>; rel="successor-version"`);
      expect(after.headers.get("x-request-id")).toBeTruthy();

      // The successor keeps working.
      expect((await api.get(`/pets?id=${pet.id}`)).body).toEqual([pet]);
      now = new Date("2030-01-01T00:00:00Z");
      expect((await api.get(`/pets/${pet.id}`)).status).toBe(410);
    });
  });

  describe("database-level checks", () => {
    let api: ApiClient;
    let key: string;
    let categoryId: number;

    beforeAll(async () => {
      api = await connect(target);
      key = target.staffKey;
      categoryId = (await createCategory(api, key)).id;
    });

    it("sold → available is allowed once quantity > 0 (a state the API itself never leaves a sold pet in)", async () => {
      const pet = await createPet(api, key, categoryId, { status: "sold" });
      expect((await api.patch(`/pets/${pet.id}`, { status: "available" }, { key })).status).toBe(409);
      await target.db.execute({ sql: "UPDATE inventory SET quantity = 3, version = version + 1 WHERE pet_id = ?", args: [pet.id] });
      const res = await api.put(`/pets/${pet.id}`, { name: pet.name, categoryId, status: "available" }, { key });
      expect(res.status).toBe(200);
      expect(res.body.status).toBe("available");
      expect((await api.get(`/store/inventory/${pet.id}`)).body).toEqual({ petId: pet.id, quantity: 3, status: "available" });
    });

    it("every update bumps the row version once; a refused update changes nothing", async () => {
      const pet = await createPet(api, key, categoryId, { name: uniqueName("Versioned") });
      const row = async () =>
        (
          await target.db.execute({
            sql: "SELECT p.version AS pv, i.version AS iv, i.quantity FROM pets p JOIN inventory i ON i.pet_id = p.id WHERE p.id = ?",
            args: [pet.id],
          })
        ).rows[0]!;
      const events = async () => Number((await target.db.execute("SELECT count(*) AS n FROM events")).rows[0]!.n);
      const before = await row();
      const e0 = await events();
      await api.patch(`/pets/${pet.id}`, { name: "Versioned again" }, { key });
      expect(Number((await row()).pv)).toBe(Number(before.pv) + 1);
      expect(await events()).toBe(e0 + 1); // pet.updated
      expect((await api.patch(`/pets/${pet.id}`, { status: "sold" }, { key })).status).toBe(200);
      const sold = await row();
      expect(Number(sold.pv)).toBe(Number(before.pv) + 2);
      expect(Number(sold.iv)).toBe(Number(before.iv) + 1);
      expect(Number(sold.quantity)).toBe(0);
      const e1 = await events();
      expect((await api.patch(`/pets/${pet.id}`, { status: "pending" }, { key })).status).toBe(409);
      expect(await row()).toEqual(sold);
      expect(await events()).toBe(e1);
    });
  });
});
