/**
 * End-to-end scenarios of the inventory reads, `GET /store/inventory` and
 * `GET /store/inventory/{petId}` (docs/api.md#endpoints, #stock-and-ordering, #caching), against the Target interface.
 */
import { beforeAll, describe, expect, it } from "vitest";
import type { Target } from "../support/target";
import { api, key, category, openCategory } from "../support/cast";
import { expectValidationError, PUBLIC_CACHE_CONTROL, walkPages } from "./categories.scenarios";
import { createPet, type PetBody } from "./pets.scenarios";

interface InventoryItemBody {
  petId: number;
  quantity: number;
  status: "available" | "pending" | "sold";
}

const petIds = (pets: { id: number }[]) => pets.map((p) => `petId=${p.id}`).join("&");

/** Register the inventory read scenarios against the target `getTarget()` returns. */
export function inventoryReadScenarios(getTarget: () => Target): void {
  describe("inventory reads", () => {
    openCategory(getTarget);

    describe("GET /store/inventory/{petId}", () => {
      it("returns the pet's entry with its status, a strong ETag and public Cache-Control; If-None-Match → 304", async () => {
        const pet = await createPet(api, key, category.id);
        const res = await api.get(`/store/inventory/${pet.id}`);
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ petId: pet.id, quantity: 1, status: "available" });
        expect(res.headers.get("cache-control")).toBe(PUBLIC_CACHE_CONTROL);
        const etag = res.headers.get("etag")!;
        expect(etag).toMatch(/^"[^"]+"$/);
        const cached = await api.get(`/store/inventory/${pet.id}`, { headers: { "If-None-Match": etag } });
        expect(cached.status).toBe(304);
        expect(cached.body).toBeNull();
        expect(cached.headers.get("etag")).toBe(etag);
      });

      it("shows the pet's status as the one truth: it follows PATCH /pets", async () => {
        const pet = await createPet(api, key, category.id);
        const etag = (await api.get(`/store/inventory/${pet.id}`)).headers.get("etag")!;
        await api.patch(`/pets/${pet.id}`, { status: "pending" }, { key });
        const held = await api.get(`/store/inventory/${pet.id}`, { headers: { "If-None-Match": etag } });
        expect(held.status).toBe(200);
        expect(held.body).toEqual({ petId: pet.id, quantity: 1, status: "pending" });
        await api.patch(`/pets/${pet.id}`, { status: "sold" }, { key });
        expect((await api.get(`/store/inventory/${pet.id}`)).body).toEqual({ petId: pet.id, quantity: 0, status: "sold" });
      });

      it("answers 404 not_found for a pet that does not exist", async () => {
        const pet = await createPet(api, key, category.id);
        await api.delete(`/pets/${pet.id}`, { key });
        const res = await api.get(`/store/inventory/${pet.id}`);
        expect(res.status).toBe(404);
        expect(res.body.code).toBe("not_found");
      });
    });

    describe("GET /store/inventory", () => {
      let pets: PetBody[];

      beforeAll(async () => {
        pets = [
          await createPet(api, key, category.id),
          await createPet(api, key, category.id, { status: "pending" }),
          await createPet(api, key, category.id, { status: "sold" }),
          await createPet(api, key, category.id),
          await createPet(api, key, category.id, { status: "pending" }),
        ];
      });

      it("returns a bare array of InventoryItem ordered by petId, filtered by repeatable petId", async () => {
        const reversed = [...pets].reverse();
        const res = await api.get(`/store/inventory?${petIds(reversed)}`);
        expect(res.status).toBe(200);
        expect(res.body).toEqual(pets.map((p) => ({ petId: p.id, quantity: p.status === "sold" ? 0 : 1, status: p.status })));
        expect((await api.get(`/store/inventory?petId=${pets[1]!.id}`)).body).toEqual([{ petId: pets[1]!.id, quantity: 1, status: "pending" }]);
        expect((await api.get("/store/inventory?petId=9007199254740991")).body).toEqual([]);
      });

      it("filters by status", async () => {
        const pending = (await api.get(`/store/inventory?status=pending&${petIds(pets)}`)).body as InventoryItemBody[];
        expect(pending.map((i) => i.petId)).toEqual([pets[1]!.id, pets[4]!.id]);
        const sold = (await api.get(`/store/inventory?${petIds(pets)}&status=sold`)).body as InventoryItemBody[];
        expect(sold).toEqual([{ petId: pets[2]!.id, quantity: 0, status: "sold" }]);
        const all = (await api.get("/store/inventory?status=available&limit=100")).body as InventoryItemBody[];
        expect(all.every((i) => i.status === "available")).toBe(true);
      });

      it("paginates with Link rel=next across pages, keeping the filters", async () => {
        const pages = await walkPages<InventoryItemBody>(api, `/store/inventory?${petIds(pets)}&limit=2`, 2);
        expect(pages.map((p) => p.length)).toEqual([2, 2, 1]);
        expect(pages.flat().map((i) => i.petId)).toEqual(pets.map((p) => p.id));
        const all = await walkPages<InventoryItemBody>(api, "/store/inventory?limit=50", 50);
        const ids = all.flat().map((i) => i.petId);
        expect(ids).toEqual([...ids].sort((a, b) => a - b));
        expect(new Set(ids).size).toBe(ids.length);
        for (const pet of pets) expect(ids).toContain(pet.id);
      });

      it("carries an ETag and public Cache-Control; If-None-Match → 304", async () => {
        const path = `/store/inventory?${petIds(pets)}`;
        const res = await api.get(path);
        expect(res.headers.get("cache-control")).toBe(PUBLIC_CACHE_CONTROL);
        const etag = res.headers.get("etag")!;
        const cached = await api.get(path, { headers: { "If-None-Match": etag } });
        expect(cached.status).toBe(304);
        expect(cached.headers.get("cache-control")).toBe(PUBLIC_CACHE_CONTROL);
      });

      it("accepts 100 petIds and rejects 101", async () => {
        const many = Array.from({ length: 99 }, (_, i) => ({ id: 9007199254740991 - i }));
        const ok = await api.get(`/store/inventory?${petIds([pets[0]!, ...many])}`);
        expect(ok.status).toBe(200);
        expect(ok.body).toHaveLength(1);
        const tooMany = await api.get(`/store/inventory?${petIds([pets[0]!, ...many, { id: 1 }])}`);
        expect(tooMany.status).toBe(400);
        expect(tooMany.body.details[0].path).toMatch(/^query\.petId/);
      });

      it.each([
        ["petId=abc", "query.petId"],
        ["petId=0", "query.petId"],
        ["status=reserved", "query.status"],
        ["limit=0", "query.limit"],
        ["limit=101", "query.limit"],
        ["cursor=bogus", "query.cursor"],
        ["id=1", "query.id"],
      ])("rejects ?%s with 400 validation_error", async (query, path) => {
        const res = await api.get(`/store/inventory?${query}`);
        expect(res.status).toBe(400);
        expect(res.body.code).toBe("validation_error");
        expect(res.body.details.some((d: { path: string }) => d.path.startsWith(path))).toBe(true);
      });

      it("rejects unknown query parameters on the single entry too", async () => {
        expectValidationError(await api.get(`/store/inventory/${pets[0]!.id}?status=sold`), ["query.status"]);
      });
    });
  });
}
