/**
 * End-to-end scenarios of the store (issue 4): orders and inventory writes
 * with every rule of the transition table of docs/api.md#stock-and-ordering (one test per row),
 * pet status changes through PUT/PATCH, ownership (§2), lists, caching (§7),
 * If-Match and Idempotency-Key (§4). Written against the Target interface so
 * the Node and Worker suites share them; each test builds its own pets and
 * customers, and lists are always narrowed to them (the Worker suite shares
 * one database). Node-only checks (injected clock, rows) are in test/resources/orders.test.ts.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { connect, uniqueName, type ApiClient, type ApiResponse } from "../support/client";
import type { Target } from "../support/target";
import { signUp, PRIVATE_CACHE_CONTROL } from "./accounts.scenarios";
import { createCategory, expectValidationError } from "./categories.scenarios";
import { createPet, type PetBody, type PetStatus } from "./pets.scenarios";

export interface OrderBody {
  id: number;
  petId: number;
  quantity: number;
  shipDate?: string;
  complete: boolean;
}

export interface InventoryBody {
  petId: number;
  quantity: number;
  status: PetStatus;
}

/** The store's client-side helpers, bound to one API client and staff key. */
export class Store {
  constructor(
    readonly api: ApiClient,
    readonly staffKey: string,
    readonly categoryId: number,
  ) {}

  /** A new pet (status as given, default available) with its creation-time stock. */
  async pet(status?: PetStatus): Promise<PetBody> {
    return createPet(this.api, this.staffKey, this.categoryId, status ? { status } : {});
  }

  /** A new available pet with `quantity` units in stock (> 0). */
  async stocked(quantity: number): Promise<PetBody> {
    const pet = await this.pet();
    if (quantity !== 1) await this.setStockOk(pet.id, quantity);
    return pet;
  }

  /** PUT /store/inventory/{petId} as staff. */
  setStock(petId: number, quantity: number, headers?: Record<string, string>): Promise<ApiResponse<InventoryBody>> {
    return this.api.put<InventoryBody>(`/store/inventory/${petId}`, { quantity }, { key: this.staffKey, headers });
  }

  async setStockOk(petId: number, quantity: number): Promise<InventoryBody> {
    const res = await this.setStock(petId, quantity);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body;
  }

  /** POST /store/orders with `key`. */
  place(key: string, body: Record<string, unknown>, headers?: Record<string, string>): Promise<ApiResponse<OrderBody>> {
    return this.api.post<OrderBody>("/store/orders", body, { key, headers });
  }

  /** Place an order, asserting 201. */
  async order(key: string, petId: number, quantity = 1, extra: Record<string, unknown> = {}): Promise<OrderBody> {
    const res = await this.place(key, { petId, quantity, ...extra });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body;
  }

  /** PATCH /store/orders/{id} as staff. */
  update(orderId: number, body: Record<string, unknown>, options: { key?: string; headers?: Record<string, string> } = {}) {
    return this.api.patch<OrderBody>(`/store/orders/${orderId}`, body, { key: options.key ?? this.staffKey, headers: options.headers });
  }

  /** Fulfil as staff, asserting 200. */
  async fulfil(orderId: number, body: Record<string, unknown> = {}): Promise<OrderBody> {
    const res = await this.update(orderId, { complete: true, ...body });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body;
  }

  /** DELETE /store/orders/{id} with `key`. */
  cancel(key: string, orderId: number, headers?: Record<string, string>): Promise<ApiResponse> {
    return this.api.delete(`/store/orders/${orderId}`, { key, headers });
  }

  /** The pet's inventory entry (public read). */
  async inventory(petId: number): Promise<InventoryBody> {
    const res = await this.api.get<InventoryBody>(`/store/inventory/${petId}`);
    expect(res.status).toBe(200);
    return res.body;
  }

  /** The pet's status as GET /pets?id= shows it. */
  async petStatus(petId: number): Promise<PetStatus> {
    const res = await this.api.get<PetBody[]>(`/pets?id=${petId}`);
    expect(res.body).toHaveLength(1);
    return res.body[0]!.status;
  }

  /** Every order visible to `key` matching `query`, following `Link: rel="next"`. */
  async orders(key: string, query = "", limit = 100): Promise<OrderBody[]> {
    const all: OrderBody[] = [];
    let path: string | undefined = `/store/orders?limit=${limit}${query ? `&${query}` : ""}`;
    while (path) {
      const res: ApiResponse<OrderBody[]> = await this.api.get<OrderBody[]>(path, { key });
      expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBe(200);
      expect(res.body.length).toBeLessThanOrEqual(limit);
      all.push(...res.body);
      const link = res.headers.get("link");
      path = link ? /^<([^>]+)>; rel="next"$/.exec(link)![1] : undefined;
    }
    return all;
  }

  /** Orders of the pet, as staff see them. */
  ordersOfPet(petId: number, extra = ""): Promise<OrderBody[]> {
    return this.orders(this.staffKey, `petId=${petId}${extra ? `&${extra}` : ""}`);
  }
}

/** Assert an Error response with `status` and `code`. */
export function expectError(res: ApiResponse, status: number, code: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body.code).toBe(code);
}

export function ordersScenarios(getTarget: () => Target): void {
  describe("store: orders and inventory", () => {
    let api: ApiClient;
    let store: Store;
    let staff: string;
    /** Two customers. */
    let alice: string;
    let bob: string;

    beforeAll(async () => {
      api = await connect(getTarget());
      staff = getTarget().staffKey;
      store = new Store(api, staff, (await createCategory(api, staff)).id);
      alice = (await signUp(api)).apiKey.key;
      bob = (await signUp(api)).apiKey.key;
    });

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
