/**
 * End-to-end scenarios of the last row of docs/api.md#stock-and-ordering: a
 * pet's status set by PUT/PATCH /pets/{petId}, allowed or refused (409
 * invalid_transition, nothing changes) by its stock and its open orders,
 * every from → to pair on a fresh pet. Written against the Target interface
 * so the Node and Worker suites share them.
 */
import { beforeAll, describe, expect, it } from "vitest";
import type { ApiClient } from "../support/client";
import type { Target } from "../support/target";
import type { CategoryBody } from "./categories.scenarios";
import { createPet, openPets, type PetBody, type PetStatus } from "./pets.scenarios";

/** Register the status transitions of /pets on fresh pets (describe "pets"). */
export function petStatusScenarios(getTarget: () => Target): void {
  describe("pets", () => {
    let api: ApiClient;
    let key: string;
    let category: CategoryBody;

    beforeAll(async () => {
      ({ api, key, category } = await openPets(getTarget()));
    });

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
