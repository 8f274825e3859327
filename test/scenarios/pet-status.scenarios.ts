/**
 * End-to-end scenarios of the last row of docs/api.md#stock-and-ordering: a
 * pet's status set by PUT/PATCH /pets/{petId}, allowed or refused (409
 * invalid_transition, nothing changes) by its stock and its open orders —
 * every from → to pair on a fresh pet, and the store's view of the same rules
 * with orders placed, fulfilled and restocked. Written against the Target
 * interface so the Node and Worker suites share them.
 */
import { describe, expect, it } from "vitest";
import { uniqueName } from "../support/client";
import type { Target } from "../support/target";
import { expectError, type Store } from "../support/store";
import { api, key, staff, category, store, alice, openStore, openPets } from "../support/cast";
import { createPet, type PetBody, type PetStatus } from "./pets.scenarios";

/** Register the status transitions of /pets on fresh pets (describe "pets"). */
export function petStatusScenarios(getTarget: () => Target): void {
  describe("pets", () => {
    openPets(getTarget);

    describe("status transitions by PUT/PATCH (docs/api.md#stock-and-ordering, last row)", () => {
      type Row = [from: PetStatus, to: PetStatus, expected: 200 | 409, quantityAfter: number];
      // Pets created here have quantity 1 unless sold (0) and no orders.
      const rows: Row[] = [
        ["available", "pending", 200, 1], // hold
        ["pending", "available", 200, 1], // release a hold: quantity > 0
        ["available", "sold", 200, 0], // no open order: sets quantity 0
        ["pending", "sold", 200, 0],
        ["sold", "available", 409, 0], // quantity 0: restock first
        ["sold", "pending", 409, 0], // never allowed
        ["available", "available", 200, 1], // no change
        ["pending", "pending", 200, 1],
        ["sold", "sold", 200, 0],
      ];
      for (const via of ["PATCH", "PUT"] as const) {
        it.each(rows)(`${via} %s → %s answers %i`, async (from, to, expected, quantityAfter) => {
          const pet = await createPet(api, key, category.id, { status: from });
          const body = via === "PATCH" ? { status: to } : { name: pet.name, categoryId: pet.categoryId, status: to };
          const res = await api.request(via, `/pets/${pet.id}`, body, { key });
          expect(res.status, JSON.stringify(res.body)).toBe(expected);
          if (expected === 200) {
            expect(res.body).toEqual({ ...pet, status: to });
          } else {
            expect(res.body.code).toBe("invalid_transition");
          }
          const status = expected === 200 ? to : from;
          expect((await api.get(`/pets?id=${pet.id}`)).body).toEqual([{ ...pet, status }]);
          expect((await api.get(`/store/inventory/${pet.id}`)).body).toEqual({ petId: pet.id, quantity: quantityAfter, status });
        });
      }
    });

    describe("status transitions that depend on stock and orders (docs/api.md#stock-and-ordering)", () => {
      /** A pet with `stock` units and one open order of 1 unit. */
      async function petWithOpenOrder(stock: number): Promise<{ pet: PetBody; orderId: number }> {
        const pet = await createPet(api, key, category.id);
        if (stock !== 1) expect((await api.put(`/store/inventory/${pet.id}`, { quantity: stock }, { key })).status).toBe(200);
        const order = await api.post("/store/orders", { petId: pet.id, quantity: 1 }, { key });
        expect(order.status, JSON.stringify(order.body)).toBe(201);
        return { pet, orderId: order.body.id };
      }

      it("available → sold is refused while an order is open (409 invalid_transition), nothing changes", async () => {
        const { pet } = await petWithOpenOrder(5);
        for (const via of ["PATCH", "PUT"]) {
          const body = via === "PATCH" ? { status: "sold" } : { name: pet.name, categoryId: pet.categoryId, status: "sold" };
          const res = await api.request(via, `/pets/${pet.id}`, body, { key });
          expect(res.status).toBe(409);
          expect(res.body.code).toBe("invalid_transition");
        }
        expect((await api.get(`/store/inventory/${pet.id}`)).body).toEqual({ petId: pet.id, quantity: 4, status: "available" });
      });

      it("pending → sold is refused while an order is open; pending → available needs quantity > 0", async () => {
        const { pet } = await petWithOpenOrder(1); // the last unit is ordered: pending, quantity 0
        expect((await api.get(`/store/inventory/${pet.id}`)).body).toEqual({ petId: pet.id, quantity: 0, status: "pending" });
        for (const status of ["sold", "available"] as const) {
          const res = await api.patch(`/pets/${pet.id}`, { status }, { key });
          expect(res.status, status).toBe(409);
          expect(res.body.code).toBe("invalid_transition");
        }
        expect((await api.get(`/pets?id=${pet.id}`)).body).toEqual([{ ...pet, status: "pending" }]);
        // With stock again, the hold can be released.
        expect((await api.put(`/store/inventory/${pet.id}`, { quantity: 2 }, { key })).status).toBe(200);
        const held = await api.patch(`/pets/${pet.id}`, { status: "pending" }, { key });
        expect(held.body.status).toBe("pending");
        expect((await api.patch(`/pets/${pet.id}`, { status: "available" }, { key })).body.status).toBe("available");
      });

      it("DELETE refuses a pet that an order references: 409 pet_has_orders", async () => {
        const { pet } = await petWithOpenOrder(3);
        const res = await api.delete(`/pets/${pet.id}`, { key });
        expect(res.status).toBe(409);
        expect(res.body.code).toBe("pet_has_orders");
        expect((await api.get(`/pets?id=${pet.id}`)).body).toHaveLength(1);
        expect((await api.get(`/store/inventory/${pet.id}`)).status).toBe(200);
      });
    });
  });
}

/** Register the same rules as the store sees them, with orders and stock (describe "store: orders and inventory"). */
export function storePetStatusScenarios(getTarget: () => Target): void {
  describe("store: orders and inventory", () => {
    openStore(getTarget);

    describe("docs/api.md#stock-and-ordering last row: pet status set by PUT/PATCH", () => {
      const patchStatus = (petId: number, status: PetStatus) => api.patch<PetBody>(`/pets/${petId}`, { status }, { key: staff });
      const putPet = (pet: PetBody, status?: PetStatus) =>
        api.put<PetBody>(`/pets/${pet.id}`, { name: pet.name, categoryId: pet.categoryId, ...(status ? { status } : {}) }, { key: staff });

      it("available → pending (hold) is allowed, keeps the stock, and the pet cannot be ordered", async () => {
        const pet = await store.stocked(3);
        const res = await patchStatus(pet.id, "pending");
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ ...pet, status: "pending" });
        expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 3, status: "pending" });
        expectError(await store.place(alice, { petId: pet.id, quantity: 1 }), 409, "pet_not_available");
        // The same through PUT.
        const other = await store.stocked(2);
        expect((await putPet(other, "pending")).body.status).toBe("pending");
        expect(await store.inventory(other.id)).toEqual({ petId: other.id, quantity: 2, status: "pending" });
      });

      it("pending → available is allowed when quantity > 0 (PATCH and PUT)", async () => {
        const held = await store.pet("pending");
        expect((await patchStatus(held.id, "available")).body.status).toBe("available");
        const held2 = await store.pet("pending");
        // PUT without status is a full replace: status back to its default, available.
        expect((await putPet(held2)).body.status).toBe("available");
        expect(await store.inventory(held2.id)).toEqual({ petId: held2.id, quantity: 1, status: "available" });
      });

      it("pending → available is refused at quantity 0: 409 invalid_transition, nothing changes", async () => {
        const pet = await store.stocked(1);
        await store.order(alice, pet.id);
        expectError(await patchStatus(pet.id, "available"), 409, "invalid_transition");
        expectError(await putPet(pet, "available"), 409, "invalid_transition");
        expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 0, status: "pending" });
      });

      it.each([
        ["available", (s: Store) => s.stocked(3)],
        ["pending", (s: Store) => s.pet("pending")],
      ] as const)("%s → sold without open orders is allowed and sets quantity 0", async (from, make) => {
        const pet = await make(store);
        expect(pet.status).toBe(from);
        const res = await patchStatus(pet.id, "sold");
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ ...pet, status: "sold" });
        expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 0, status: "sold" });
        const viaPut = await make(store);
        expect((await putPet(viaPut, "sold")).body.status).toBe("sold");
        expect(await store.inventory(viaPut.id)).toEqual({ petId: viaPut.id, quantity: 0, status: "sold" });
      });

      it("available → sold is allowed when the only orders are fulfilled", async () => {
        const pet = await store.stocked(3);
        await store.fulfil((await store.order(alice, pet.id)).id);
        expect((await patchStatus(pet.id, "sold")).status).toBe(200);
        expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 0, status: "sold" });
      });

      it.each([
        ["available", 3, 1],
        ["pending", 1, 1],
      ] as const)("%s → sold with an open order is refused: 409 invalid_transition, nothing changes", async (from, stock, ordered) => {
        const pet = await store.stocked(stock);
        await store.order(alice, pet.id, ordered);
        const before = await store.inventory(pet.id);
        expect(before.status).toBe(from);
        expectError(await patchStatus(pet.id, "sold"), 409, "invalid_transition");
        expectError(await putPet(pet, "sold"), 409, "invalid_transition");
        expect(await store.inventory(pet.id)).toEqual(before);
      });

      it("sold → available needs quantity > 0: refused at 0, a restock makes the pet available", async () => {
        const pet = await store.pet("sold");
        expectError(await patchStatus(pet.id, "available"), 409, "invalid_transition");
        expectError(await putPet(pet), 409, "invalid_transition");
        expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 0, status: "sold" });
        await store.setStockOk(pet.id, 2);
        expect(await store.petStatus(pet.id)).toBe("available");
        // Now available → available is no transition at all.
        expect((await patchStatus(pet.id, "available")).status).toBe(200);
      });

      it("sold → pending is never allowed", async () => {
        const pet = await store.pet("sold");
        expectError(await patchStatus(pet.id, "pending"), 409, "invalid_transition");
        expectError(await putPet(pet, "pending"), 409, "invalid_transition");
        expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 0, status: "sold" });
      });

      it("keeping the status is no transition (sold → sold, pending → pending with open orders)", async () => {
        const sold = await store.pet("sold");
        const renamed = uniqueName("Renamed");
        const res = await api.put<PetBody>(`/pets/${sold.id}`, { name: renamed, categoryId: sold.categoryId, status: "sold" }, { key: staff });
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ ...sold, name: renamed });
        const pending = await store.stocked(1);
        await store.order(alice, pending.id);
        expect((await api.patch(`/pets/${pending.id}`, { name: renamed, status: "pending" }, { key: staff })).status).toBe(200);
      });
    });
  });
}
