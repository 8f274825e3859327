/**
 * End-to-end scenarios of who may do what in the store and what a request may
 * carry: customers see and cancel only their own orders, staff see and cancel
 * all, only staff fulfil, reschedule or set stock, no key is 401
 * (docs/api.md#authorisation); bad bodies, shipDates and stock values are 400
 * and place nothing. Written against the Target interface so the Node and
 * Worker suites share them.
 */
import { describe, expect, it } from "vitest";
import type { Target } from "../support/target";
import { expectError } from "../support/store";
import { api, staff, store, alice, bob, openStore } from "../support/cast";
import { expectValidationError } from "./categories.scenarios";

export function orderAccessScenarios(getTarget: () => Target): void {
  describe("store: orders and inventory", () => {
    openStore(getTarget);

    describe("ownership (docs/api.md#authorisation)", () => {
      it("a customer sees only their own orders; another customer's order is 404 on GET and DELETE", async () => {
        const pet = await store.stocked(3);
        const mine = await store.order(alice, pet.id);
        const theirs = await store.order(bob, pet.id);
        expect((await api.get(`/store/orders/${mine.id}`, { key: alice })).body).toEqual(mine);
        expectError(await api.get(`/store/orders/${theirs.id}`, { key: alice }), 404, "not_found");
        expectError(await store.cancel(alice, theirs.id), 404, "not_found");
        // Bob's order was not touched.
        expect((await api.get(`/store/orders/${theirs.id}`, { key: bob })).body).toEqual(theirs);
        expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 1, status: "available" });
        expect(await store.orders(alice, `petId=${pet.id}`)).toEqual([mine]);
        expect(await store.orders(bob, `petId=${pet.id}`)).toEqual([theirs]);
      });

      it("staff see every order, and can cancel a customer's order", async () => {
        const pet = await store.stocked(3);
        const a = await store.order(alice, pet.id);
        const b = await store.order(bob, pet.id);
        const own = await store.order(staff, pet.id);
        expect((await api.get(`/store/orders/${a.id}`, { key: staff })).body).toEqual(a);
        expect(await store.ordersOfPet(pet.id)).toEqual([a, b, own]);
        expect((await store.cancel(staff, a.id)).status).toBe(204);
        expect(await store.ordersOfPet(pet.id)).toEqual([b, own]);
        expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 1, status: "available" });
        // Customers never see staff orders either.
        expect(await store.orders(alice, `petId=${pet.id}`)).toEqual([]);
      });

      it("customers cannot fulfil or reschedule: PATCH is 403 forbidden, even on their own order", async () => {
        const pet = await store.stocked(2);
        const order = await store.order(alice, pet.id);
        expectError(await store.update(order.id, { complete: true }, { key: alice }), 403, "forbidden");
        expectError(await store.update(order.id, { shipDate: "2030-01-01T00:00:00Z" }, { key: alice }), 403, "forbidden");
        expect((await api.get(`/store/orders/${order.id}`, { key: alice })).body).toEqual(order);
        expect((await store.fulfil(order.id)).complete).toBe(true);
      });

      it("customers cannot set stock: PUT /store/inventory is 403 forbidden", async () => {
        const pet = await store.stocked(2);
        expectError(await api.put(`/store/inventory/${pet.id}`, { quantity: 9 }, { key: alice }), 403, "forbidden");
        expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 2, status: "available" });
      });

      it("without a key the orders are 401", async () => {
        expectError(await api.get("/store/orders"), 401, "unauthorized");
        expectError(await api.post("/store/orders", { petId: 1, quantity: 1 }), 401, "unauthorized");
        expectError(await api.get("/store/orders/1"), 401, "unauthorized");
        expectError(await api.delete("/store/orders/1"), 401, "unauthorized");
      });

      it("an order of a missing pet → 422 pet_not_found; a missing order → 404", async () => {
        const gone = await store.pet();
        expect((await api.delete(`/pets/${gone.id}`, { key: staff })).status).toBe(204);
        expectError(await store.place(alice, { petId: gone.id, quantity: 1 }), 422, "pet_not_found");
        expectError(await store.place(alice, { petId: 9007199254740991, quantity: 1 }), 422, "pet_not_found");
        expectError(await api.get("/store/orders/9007199254740991", { key: staff }), 404, "not_found");
        expectError(await store.update(9007199254740991, { complete: true }), 404, "not_found");
        expectError(await store.cancel(staff, 9007199254740991), 404, "not_found");
        expectError(await store.setStock(gone.id, 1), 404, "not_found");
      });
    });

    describe("validation", () => {
      it("rejects bad order bodies: 400 validation_error naming each path, nothing placed", async () => {
        const pet = await store.stocked(2);
        expectValidationError(await store.place(alice, { petId: pet.id }), ["body.quantity"]);
        expectValidationError(await store.place(alice, { quantity: 1 }), ["body.petId"]);
        expectValidationError(await store.place(alice, { petId: pet.id, quantity: 0 }), ["body.quantity"]);
        expectValidationError(await store.place(alice, { petId: pet.id, quantity: 1001 }), ["body.quantity"]);
        expectValidationError(await store.place(alice, { petId: pet.id, quantity: 1.5 }), ["body.quantity"]);
        expectValidationError(await store.place(alice, { petId: pet.id, quantity: "1" }), ["body.quantity"]);
        expectValidationError(await store.place(alice, { petId: pet.id, quantity: 1, complete: true }), ["body.complete"]);
        expectValidationError(await store.place(alice, { petId: pet.id, quantity: 1, id: 5 }), ["body.id"]);
        expectValidationError(await store.place(alice, { petId: pet.id, quantity: 1, shipDate: "tomorrow" }), ["body.shipDate"]);
        expect(await store.ordersOfPet(pet.id)).toEqual([]);
        expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 2, status: "available" });
      });

      it("shipDate stays within the years 0001–9999 (UTC) and always comes back as RFC 3339", async () => {
        const pet = await store.stocked(5);
        for (const shipDate of ["9999-12-31T23:59:59-01:00", "0000-01-01T00:00:00+00:01", "0000-06-01T00:00:00Z"]) {
          expectValidationError(await store.place(alice, { petId: pet.id, quantity: 1, shipDate }), ["body.shipDate"]);
        }
        const order = await store.order(alice, pet.id);
        expectValidationError(await store.update(order.id, { shipDate: "9999-12-31T23:59:59-01:00" }), ["body.shipDate"]);
        const rfc3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
        for (const [given, stored] of [
          ["9999-12-31T23:59:59Z", "9999-12-31T23:59:59.000Z"],
          ["0001-01-01T00:00:00+00:00", "0001-01-01T00:00:00.000Z"],
          ["9999-12-31T23:59:59+01:00", "9999-12-31T22:59:59.000Z"],
        ]) {
          const res = await store.place(alice, { petId: pet.id, quantity: 1, shipDate: given });
          expect(res.status, JSON.stringify(res.body)).toBe(201);
          expect(res.body.shipDate).toBe(stored);
          expect(res.body.shipDate).toMatch(rfc3339);
        }
      });

      it("rejects bad updates and stock values", async () => {
        const pet = await store.stocked(2);
        const order = await store.order(alice, pet.id);
        expectValidationError(await store.update(order.id, {}), []);
        expectValidationError(await store.update(order.id, { complete: "yes" }), ["body.complete"]);
        expectValidationError(await store.update(order.id, { quantity: 2 }), ["body.quantity"]);
        expectValidationError(await store.setStock(pet.id, -1), ["body.quantity"]);
        expectValidationError(await store.setStock(pet.id, 1_000_001), ["body.quantity"]);
        expectValidationError(await api.put(`/store/inventory/${pet.id}`, { quantity: 1, status: "sold" }, { key: staff }), ["body.status"]);
        expect(await store.setStockOk(pet.id, 1_000_000)).toEqual({ petId: pet.id, quantity: 1_000_000, status: "available" });
      });
    });
  });
}
