/**
 * End-to-end scenarios of GET /store/orders and GET /store/orders/{orderId}:
 * filters, keyset pagination with `Link: rel="next"`, query validation, and
 * the private cache policy with ETag / If-None-Match (docs/api.md#lists-and-pagination,
 * #caching). Written against the Target interface so the Node and Worker
 * suites share them; each test lists only the orders of its own customers or pets.
 */
import { describe, expect, it } from "vitest";
import type { Target } from "../support/target";
import type { OrderBody } from "../support/store";
import { api, staff, store, alice, openStore } from "../support/cast";
import { PRIVATE_CACHE_CONTROL, signUp } from "./accounts.scenarios";
import { expectValidationError } from "./categories.scenarios";

export function orderListsScenarios(getTarget: () => Target): void {
  describe("store: orders and inventory", () => {
    openStore(getTarget);

    describe("lists (GET /store/orders)", () => {
      it("filters by petId and complete, ascending by id", async () => {
        const petA = await store.stocked(5);
        const petB = await store.stocked(5);
        const { apiKey } = await signUp(api);
        const carol = apiKey.key;
        const a1 = await store.order(carol, petA.id);
        const b1 = await store.order(carol, petB.id);
        const a2 = await store.order(carol, petA.id, 2);
        const a1done = await store.fulfil(a1.id);
        expect(await store.orders(carol)).toEqual([a1done, b1, a2]);
        expect(await store.orders(carol, `petId=${petA.id}`)).toEqual([a1done, a2]);
        expect(await store.orders(carol, `petId=${petA.id}&complete=true`)).toEqual([a1done]);
        expect(await store.orders(carol, `petId=${petA.id}&complete=false`)).toEqual([a2]);
        expect(await store.orders(carol, "complete=false")).toEqual([b1, a2]);
        expect(await store.ordersOfPet(petB.id, "complete=true")).toEqual([]);
      });

      it('paginates with limit and Link: rel="next" until the end, without gaps or repeats', async () => {
        const pet = await store.stocked(10);
        const { apiKey } = await signUp(api);
        const placed: OrderBody[] = [];
        for (let i = 0; i < 5; i++) placed.push(await store.order(apiKey.key, pet.id));
        const first = await api.get<OrderBody[]>("/store/orders?limit=2", { key: apiKey.key });
        expect(first.body).toEqual(placed.slice(0, 2));
        const link = first.headers.get("link")!;
        expect(link).toMatch(/^<\/store\/orders\?[^>]*cursor=[^>]+>; rel="next"$/);
        expect(new URL(/^<([^>]+)>/.exec(link)![1]!, "http://x").searchParams.get("limit")).toBe("2");
        expect(await store.orders(apiKey.key, "", 2)).toEqual(placed);
        // The last page has no Link; staff see the same orders through the pet filter.
        const last = await api.get<OrderBody[]>("/store/orders?limit=5", { key: apiKey.key });
        expect(last.body).toEqual(placed);
        expect(last.headers.get("link")).toBeNull();
        expect(await store.orders(staff, `petId=${pet.id}`, 2)).toEqual(placed);
      });

      it("rejects unknown or malformed query parameters (400)", async () => {
        expectValidationError(await api.get("/store/orders?complete=maybe", { key: alice }), ["query.complete"]);
        expectValidationError(await api.get("/store/orders?petId=abc", { key: alice }), ["query.petId"]);
        expectValidationError(await api.get("/store/orders?limit=0", { key: alice }), ["query.limit"]);
        expectValidationError(await api.get("/store/orders?cursor=bogus", { key: alice }), ["query.cursor"]);
        expect((await api.get("/store/orders?status=open", { key: alice })).status).toBe(400);
      });

      it("are private: Cache-Control private, no-store; ETag + If-None-Match → 304 until the data changes", async () => {
        const pet = await store.stocked(3);
        const { apiKey } = await signUp(api);
        const key = apiKey.key;
        await store.order(key, pet.id);
        const res = await api.get("/store/orders", { key });
        expect(res.status).toBe(200);
        expect(res.headers.get("cache-control")).toBe(PRIVATE_CACHE_CONTROL);
        const etag = res.headers.get("etag")!;
        expect(etag).toMatch(/^"[^"]+"$/);
        const cached = await api.get("/store/orders", { key, headers: { "If-None-Match": etag } });
        expect(cached.status).toBe(304);
        expect(cached.body).toBeNull();
        expect(cached.headers.get("etag")).toBe(etag);
        expect(cached.headers.get("cache-control")).toBe(PRIVATE_CACHE_CONTROL);
        await store.order(key, pet.id);
        const changed = await api.get("/store/orders", { key, headers: { "If-None-Match": etag } });
        expect(changed.status).toBe(200);
        expect(changed.body).toHaveLength(2);
        expect(changed.headers.get("etag")).not.toBe(etag);
      });

      it("GET /store/orders/{id}: private, ETag + If-None-Match → 304; DELETE and PATCH are private too", async () => {
        const pet = await store.stocked(3);
        const order = await store.order(alice, pet.id);
        const res = await api.get(`/store/orders/${order.id}`, { key: alice });
        expect(res.headers.get("cache-control")).toBe(PRIVATE_CACHE_CONTROL);
        const etag = res.headers.get("etag")!;
        expect(etag).toBeTruthy();
        expect((await api.get(`/store/orders/${order.id}`, { key: alice, headers: { "If-None-Match": etag } })).status).toBe(304);
        // Staff get the same representation, hence the same ETag.
        expect((await api.get(`/store/orders/${order.id}`, { key: staff })).headers.get("etag")).toBe(etag);
        const fulfilled = await store.update(order.id, { complete: true });
        expect(fulfilled.headers.get("cache-control")).toBe(PRIVATE_CACHE_CONTROL);
        expect((await api.get(`/store/orders/${order.id}`, { key: alice, headers: { "If-None-Match": etag } })).status).toBe(200);
        const other = await store.order(alice, pet.id);
        const cancelled = await store.cancel(alice, other.id);
        expect(cancelled.status).toBe(204);
        expect(cancelled.headers.get("cache-control")).toBe(PRIVATE_CACHE_CONTROL);
      });
    });
  });
}
