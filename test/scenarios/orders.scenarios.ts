/**
 * End-to-end scenarios of the store (issue 4): orders and inventory writes
 * with every rule of the transition table of docs/api.md#stock-and-ordering
 * (one test per row). Written against the Target interface so the Node and
 * Worker suites share them; each test builds its own pets and customers, and
 * lists are always narrowed to them (the Worker suite shares one database).
 * The rest of the store is beside it: pet-status (the table's last row),
 * order-access, order-lists and order-safe-writes; Node-only checks (injected
 * clock, rows) are in test/resources/orders.test.ts.
 */
import { describe, expect, it } from "vitest";
import type { Target } from "../support/target";
import { expectError, type Store } from "../support/store";
import { api, staff, store, alice, bob, openStore } from "../support/cast";
import { PRIVATE_CACHE_CONTROL } from "./accounts.scenarios";

export function ordersScenarios(getTarget: () => Target): void {
  describe("store: orders and inventory", () => {
    openStore(getTarget);

    describe("docs/api.md#stock-and-ordering transition table", () => {
      it.each([undefined, "available", "pending"] as const)("pet created with status %s → inventory quantity 1", async (status) => {
        const pet = await store.pet(status);
        expect(pet.status).toBe(status ?? "available");
        expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 1, status: status ?? "available" });
      });

      it("pet created sold → inventory quantity 0", async () => {
        const pet = await store.pet("sold");
        expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 0, status: "sold" });
      });

      it("order placed (pet available, enough stock) → quantity −= requested; at 0 the pet becomes pending", async () => {
        const pet = await store.stocked(5);
        const first = await store.place(alice, { petId: pet.id, quantity: 2 });
        expect(first.status).toBe(201);
        expect(first.body).toEqual({ id: expect.any(Number), petId: pet.id, quantity: 2, complete: false });
        expect(first.headers.get("location")).toBe(`/store/orders/${first.body.id}`);
        expect(first.headers.get("cache-control")).toBe(PRIVATE_CACHE_CONTROL);
        expect(first.headers.get("idempotent-replayed")).toBeNull();
        expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 3, status: "available" });
        expect(await store.petStatus(pet.id)).toBe("available");

        const last = await store.order(alice, pet.id, 3);
        expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 0, status: "pending" });
        expect(await store.petStatus(pet.id)).toBe("pending");
        expect((await api.get(first.headers.get("location")!, { key: alice })).body).toEqual(first.body);
        expect((await store.ordersOfPet(pet.id)).map((o) => o.id)).toEqual([first.body.id, last.id]);
      });

      it.each(["pending", "sold"] as const)("order placed for a %s pet → 409 pet_not_available, nothing changes", async (status) => {
        const pet = await store.pet(status);
        const before = await store.inventory(pet.id);
        expectError(await store.place(alice, { petId: pet.id, quantity: 1 }), 409, "pet_not_available");
        expect(await store.inventory(pet.id)).toEqual(before);
        expect(await store.ordersOfPet(pet.id)).toEqual([]);
      });

      it("order placed for more than the stock → 409 insufficient_stock, nothing changes", async () => {
        const pet = await store.stocked(2);
        const res = await store.place(alice, { petId: pet.id, quantity: 3 });
        expectError(res, 409, "insufficient_stock");
        expect(res.headers.get("location")).toBeNull();
        expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 2, status: "available" });
        expect(await store.ordersOfPet(pet.id)).toEqual([]);
        // Exactly the stock is fine.
        await store.order(alice, pet.id, 2);
        expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 0, status: "pending" });
      });

      it("order fulfilled → complete, shipDate defaults to now; stock 0 and no other open order → the pet is sold", async () => {
        const pet = await store.stocked(1);
        const order = await store.order(alice, pet.id);
        expect(await store.petStatus(pet.id)).toBe("pending");
        const before = Date.now();
        const fulfilled = await store.fulfil(order.id);
        const after = Date.now();
        expect(fulfilled).toEqual({ ...order, complete: true, shipDate: expect.any(String) });
        expect(new Date(fulfilled.shipDate!).toISOString()).toBe(fulfilled.shipDate);
        // "now" of the server; a minute of slack for a server clock that is not the test's.
        expect(Date.parse(fulfilled.shipDate!)).toBeGreaterThanOrEqual(before - 60_000);
        expect(Date.parse(fulfilled.shipDate!)).toBeLessThanOrEqual(after + 60_000);
        expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 0, status: "sold" });
        expect(await store.petStatus(pet.id)).toBe("sold");
        expect((await api.get(`/store/orders/${order.id}`, { key: alice })).body).toEqual(fulfilled);
      });

      it("order fulfilled while another order of the pet is open → the pet stays pending until the last one", async () => {
        const pet = await store.stocked(2);
        const a = await store.order(alice, pet.id);
        const b = await store.order(bob, pet.id);
        expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 0, status: "pending" });
        await store.fulfil(a.id);
        expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 0, status: "pending" });
        await store.fulfil(b.id);
        expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 0, status: "sold" });
      });

      it("order fulfilled with stock left → the pet stays available; an explicit shipDate is kept", async () => {
        const pet = await store.stocked(3);
        const order = await store.order(alice, pet.id);
        const fulfilled = await store.fulfil(order.id, { shipDate: "2026-12-24T18:30:00+01:00" });
        expect(fulfilled).toEqual({ ...order, complete: true, shipDate: "2026-12-24T17:30:00.000Z" });
        expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 2, status: "available" });
      });

      it("order cancelled → its quantity returns and a pending pet becomes available", async () => {
        const pet = await store.stocked(3);
        const order = await store.order(alice, pet.id, 3);
        expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 0, status: "pending" });
        const res = await store.cancel(alice, order.id);
        expect(res.status).toBe(204);
        expect(res.body).toBeNull();
        expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 3, status: "available" });
        expect((await api.get(`/store/orders/${order.id}`, { key: alice })).status).toBe(404);
        expect(await store.ordersOfPet(pet.id)).toEqual([]);
      });

      it("order cancelled with stock left → the quantity returns, the pet stays available", async () => {
        const pet = await store.stocked(4);
        const order = await store.order(alice, pet.id, 2);
        expect((await store.cancel(alice, order.id)).status).toBe(204);
        expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 4, status: "available" });
        // A cancelled order is gone: cancelling again is 404.
        expectError(await store.cancel(alice, order.id), 404, "not_found");
      });

      it("order changed or cancelled once complete → 409 order_complete, nothing changes", async () => {
        const pet = await store.stocked(2);
        const order = await store.order(alice, pet.id);
        const fulfilled = await store.fulfil(order.id);
        const stock = await store.inventory(pet.id);
        expectError(await store.update(order.id, { shipDate: "2030-01-01T00:00:00Z" }), 409, "order_complete");
        expectError(await store.update(order.id, { complete: true }), 409, "order_complete");
        expectError(await store.update(order.id, { complete: false }), 409, "order_complete");
        expectError(await store.cancel(alice, order.id), 409, "order_complete");
        expectError(await store.cancel(staff, order.id), 409, "order_complete");
        expect((await api.get(`/store/orders/${order.id}`, { key: alice })).body).toEqual(fulfilled);
        expect(await store.inventory(pet.id)).toEqual(stock);
      });

      it("an open order can be rescheduled (PATCH shipDate) and stays open", async () => {
        const pet = await store.stocked(2);
        const order = await store.order(alice, pet.id, 1, { shipDate: "2026-12-01T10:00:00+02:00" });
        expect(order.shipDate).toBe("2026-12-01T08:00:00.000Z");
        const res = await store.update(order.id, { shipDate: "2026-12-02T09:00:00Z" });
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ ...order, shipDate: "2026-12-02T09:00:00.000Z" });
        expect(res.headers.get("cache-control")).toBe(PRIVATE_CACHE_CONTROL);
        expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 1, status: "available" });
      });

      it.each([
        ["available", async (s: Store) => s.stocked(1)],
        ["pending (hold)", async (s: Store) => s.pet("pending")],
        [
          "pending (stock 0, open order)",
          async (s: Store, key: string) => {
            const pet = await s.stocked(1);
            await s.order(key, pet.id);
            return pet;
          },
        ],
        ["sold", async (s: Store) => s.pet("sold")],
      ] as const)("inventory set to n > 0 → available from %s", async (_label, make) => {
        const pet = await make(store, alice);
        const res = await store.setStock(pet.id, 4);
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ petId: pet.id, quantity: 4, status: "available" });
        expect(await store.inventory(pet.id)).toEqual(res.body);
        expect(await store.petStatus(pet.id)).toBe("available");
        await store.order(bob, pet.id, 4);
      });

      it("inventory set to 0 with open orders → pending (and fulfilling the last one sells the pet)", async () => {
        const pet = await store.stocked(3);
        const order = await store.order(alice, pet.id);
        expect(await store.setStockOk(pet.id, 0)).toEqual({ petId: pet.id, quantity: 0, status: "pending" });
        expect(await store.petStatus(pet.id)).toBe("pending");
        expectError(await store.place(bob, { petId: pet.id, quantity: 1 }), 409, "pet_not_available");
        await store.fulfil(order.id);
        expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 0, status: "sold" });
      });

      it.each([
        ["available, never ordered", async (s: Store) => s.stocked(2)],
        ["pending (hold)", async (s: Store) => s.pet("pending")],
        [
          "with only fulfilled orders",
          async (s: Store, key: string) => {
            const pet = await s.stocked(2);
            await s.fulfil((await s.order(key, pet.id)).id);
            return pet;
          },
        ],
      ] as const)("inventory set to 0 without open orders (%s) → sold", async (_label, make) => {
        const pet = await make(store, alice);
        expect(await store.setStockOk(pet.id, 0)).toEqual({ petId: pet.id, quantity: 0, status: "sold" });
        expect(await store.petStatus(pet.id)).toBe("sold");
      });
    });
  });
}
