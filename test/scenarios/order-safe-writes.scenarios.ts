/**
 * End-to-end scenarios of the two headers that make store writes safe to
 * repeat: If-Match on PUT /store/inventory and PATCH/DELETE /store/orders
 * (a stale ETag is 412 and changes nothing; docs/api.md#conditional-requests)
 * and Idempotency-Key on POST /store/orders (a retry replays the first order
 * instead of placing another; docs/api.md#idempotency-key). Written against
 * the Target interface so the Node and Worker suites share them.
 */
import { describe, expect, it } from "vitest";
import { uniqueName } from "../support/client";
import type { Target } from "../support/target";
import { expectError } from "../support/store";
import { api, staff, store, alice, bob, openStore } from "../support/cast";
import { PRIVATE_CACHE_CONTROL } from "./accounts.scenarios";

export function orderSafeWritesScenarios(getTarget: () => Target): void {
  describe("store: orders and inventory", () => {
    openStore(getTarget);

    describe("If-Match (docs/api.md#conditional-requests)", () => {
      it("PUT /store/inventory: stale ETag → 412 precondition_failed and nothing changes; current ETag → 200", async () => {
        const pet = await store.stocked(3);
        const first = await api.get(`/store/inventory/${pet.id}`);
        const stale = first.headers.get("etag")!;
        expect(stale).toBeTruthy();
        expect((await store.setStock(pet.id, 4, { "If-Match": stale })).status).toBe(200);
        expectError(await store.setStock(pet.id, 7, { "If-Match": stale }), 412, "precondition_failed");
        expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 4, status: "available" });
        const current = (await api.get(`/store/inventory/${pet.id}`)).headers.get("etag")!;
        expect(current).not.toBe(stale);
        const ok = await store.setStock(pet.id, 0, { "If-Match": current });
        expect(ok.status).toBe(200);
        expect(ok.headers.get("etag")).toBe((await api.get(`/store/inventory/${pet.id}`)).headers.get("etag"));
        expect(ok.body).toEqual({ petId: pet.id, quantity: 0, status: "sold" });
        // An order changes the entry too: the ETag read before it is stale.
        const again = await store.setStockOk(pet.id, 2);
        const before = (await api.get(`/store/inventory/${pet.id}`)).headers.get("etag")!;
        await store.order(alice, pet.id);
        expectError(await store.setStock(pet.id, 9, { "If-Match": before }), 412, "precondition_failed");
        expect(await store.inventory(pet.id)).toEqual({ ...again, quantity: 1 });
      });

      it("PATCH /store/orders/{id}: stale ETag → 412, nothing changes; current ETag → 200", async () => {
        const pet = await store.stocked(2);
        const order = await store.order(alice, pet.id);
        const stale = (await api.get(`/store/orders/${order.id}`, { key: staff })).headers.get("etag")!;
        const moved = await store.update(order.id, { shipDate: "2027-01-01T00:00:00Z" }, { headers: { "If-Match": stale } });
        expect(moved.status).toBe(200);
        // The response carries the new ETag, the one GET shows.
        expect(moved.headers.get("etag")).toBe((await api.get(`/store/orders/${order.id}`, { key: staff })).headers.get("etag"));
        expectError(await store.update(order.id, { complete: true }, { headers: { "If-Match": stale } }), 412, "precondition_failed");
        expect((await api.get(`/store/orders/${order.id}`, { key: staff })).body).toEqual(moved.body);
        expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 1, status: "available" });
        const current = (await api.get(`/store/orders/${order.id}`, { key: staff })).headers.get("etag")!;
        const done = await store.update(order.id, { complete: true }, { headers: { "If-Match": current } });
        expect(done.status).toBe(200);
        expect(done.body.complete).toBe(true);
      });

      it("DELETE /store/orders/{id}: stale ETag → 412 and the order stays; current ETag → 204", async () => {
        const pet = await store.stocked(2);
        const order = await store.order(alice, pet.id);
        const stale = (await api.get(`/store/orders/${order.id}`, { key: alice })).headers.get("etag")!;
        await store.update(order.id, { shipDate: "2027-02-01T00:00:00Z" });
        expectError(await store.cancel(alice, order.id, { "If-Match": stale }), 412, "precondition_failed");
        expect((await api.get(`/store/orders/${order.id}`, { key: alice })).status).toBe(200);
        expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 1, status: "available" });
        const current = (await api.get(`/store/orders/${order.id}`, { key: alice })).headers.get("etag")!;
        expect((await store.cancel(alice, order.id, { "If-Match": current })).status).toBe(204);
        expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 2, status: "available" });
      });

      it("If-Match on another customer's order is still 404 (existence is not disclosed)", async () => {
        const pet = await store.stocked(2);
        const order = await store.order(bob, pet.id);
        const etag = (await api.get(`/store/orders/${order.id}`, { key: bob })).headers.get("etag")!;
        expectError(await store.cancel(alice, order.id, { "If-Match": etag }), 404, "not_found");
        expectError(await store.cancel(alice, order.id, { "If-Match": '"stale"' }), 404, "not_found");
      });
    });

    describe("Idempotency-Key (docs/api.md#idempotency-key)", () => {
      const idem = (key: string) => ({ "Idempotency-Key": key });

      it("same key and body → the first response replayed (Idempotent-Replayed: true, same Location), one order", async () => {
        const pet = await store.stocked(5);
        const key = uniqueName("idem");
        const body = { petId: pet.id, quantity: 2, shipDate: "2027-03-01T12:00:00Z" };
        const first = await store.place(alice, body, idem(key));
        expect(first.status).toBe(201);
        expect(first.headers.get("idempotent-replayed")).toBeNull();
        for (let i = 0; i < 2; i++) {
          const again = await store.place(alice, body, idem(key));
          expect(again.status).toBe(201);
          expect(again.body).toEqual(first.body);
          expect(again.headers.get("location")).toBe(first.headers.get("location"));
          expect(again.headers.get("idempotent-replayed")).toBe("true");
          expect(again.headers.get("cache-control")).toBe(PRIVATE_CACHE_CONTROL);
        }
        expect(await store.ordersOfPet(pet.id)).toEqual([first.body]);
        expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 3, status: "available" });
        // Another key is another order.
        const other = await store.place(alice, body, idem(uniqueName("idem")));
        expect(other.status).toBe(201);
        expect(other.body.id).not.toBe(first.body.id);
      });

      it("the replay is the stored first response, even after the order changed", async () => {
        const pet = await store.stocked(3);
        const key = uniqueName("idem");
        const first = await store.place(alice, { petId: pet.id, quantity: 1 }, idem(key));
        await store.fulfil(first.body.id);
        const again = await store.place(alice, { petId: pet.id, quantity: 1 }, idem(key));
        expect(again.status).toBe(201);
        expect(again.body).toEqual(first.body);
        expect(again.headers.get("idempotent-replayed")).toBe("true");
        expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 2, status: "available" });
      });

      it("same key with a different body → 422 idempotency_key_reused, nothing placed", async () => {
        const pet = await store.stocked(5);
        const key = uniqueName("idem");
        const first = await store.place(alice, { petId: pet.id, quantity: 1 }, idem(key));
        expect(first.status).toBe(201);
        expectError(await store.place(alice, { petId: pet.id, quantity: 2 }, idem(key)), 422, "idempotency_key_reused");
        expectError(await store.place(alice, { petId: pet.id, quantity: 1, shipDate: "2027-01-01T00:00:00Z" }, idem(key)), 422, "idempotency_key_reused");
        const otherPet = await store.stocked(1);
        expectError(await store.place(alice, { petId: otherPet.id, quantity: 1 }, idem(key)), 422, "idempotency_key_reused");
        expect(await store.ordersOfPet(pet.id)).toEqual([first.body]);
        expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 4, status: "available" });
        expect(await store.inventory(otherPet.id)).toEqual({ petId: otherPet.id, quantity: 1, status: "available" });
      });

      it("the same key from another account is independent", async () => {
        const pet = await store.stocked(5);
        const key = uniqueName("idem");
        const body = { petId: pet.id, quantity: 1 };
        const a = await store.place(alice, body, idem(key));
        const b = await store.place(bob, body, idem(key));
        expect(a.status).toBe(201);
        expect(b.status).toBe(201);
        expect(b.headers.get("idempotent-replayed")).toBeNull();
        expect(b.body.id).not.toBe(a.body.id);
        expect(await store.orders(bob, `petId=${pet.id}`)).toEqual([b.body]);
        // And with a different body it is not "reused" either.
        const c = await store.place(staff, { petId: pet.id, quantity: 2 }, idem(key));
        expect(c.status).toBe(201);
        expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 1, status: "available" });
      });

      it("a key whose order was refused (409) is not used up: the retry after a restock places the order", async () => {
        const pet = await store.stocked(1);
        const key = uniqueName("idem");
        const body = { petId: pet.id, quantity: 2 };
        expectError(await store.place(alice, body, idem(key)), 409, "insufficient_stock");
        expectError(await store.place(alice, body, idem(key)), 409, "insufficient_stock");
        await store.setStockOk(pet.id, 2);
        const placed = await store.place(alice, body, idem(key));
        expect(placed.status).toBe(201);
        expect(placed.headers.get("idempotent-replayed")).toBeNull();
        expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 0, status: "pending" });
        const replay = await store.place(alice, body, idem(key));
        expect(replay.headers.get("idempotent-replayed")).toBe("true");
        expect(replay.body).toEqual(placed.body);
      });

      it("a key of 255 characters is accepted; 256 → 400 and nothing placed", async () => {
        const pet = await store.stocked(3);
        const base = uniqueName("k").replace(/\W/g, "-");
        const ok = await store.place(alice, { petId: pet.id, quantity: 1 }, idem(base.padEnd(255, "x")));
        expect(ok.status).toBe(201);
        const tooLong = await store.place(alice, { petId: pet.id, quantity: 1 }, idem(base.padEnd(256, "y")));
        expectError(tooLong, 400, "validation_error");
        expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 2, status: "available" });
      });
    });
  });
}
