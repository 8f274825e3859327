/**
 * Runs the store's transition-table scenarios against the Node app, plus Node-only checks that
 * need an injected clock or direct database rows: the 24 h lifetime of an
 * Idempotency-Key, shipDate = the server's "now", and that refused or replayed
 * orders leave no rows behind (docs/api.md#stock-and-ordering, #idempotency-key).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, uniqueName, type ApiClient } from "../support/client";
import { nodeTarget, type NodeTarget } from "../support/node-target";
import { signUp } from "../scenarios/accounts.scenarios";
import { createCategory } from "../scenarios/categories.scenarios";
import { ordersScenarios } from "../scenarios/orders.scenarios";
import { expectError, Store } from "../support/store";

let target: NodeTarget;
beforeAll(async () => {
  target = await nodeTarget();
});
afterAll(async () => {
  await target?.close();
});

ordersScenarios(() => target);

describe("store (Node only, injected clock and database rows)", () => {
  const DAY = 24 * 60 * 60 * 1000;
  let now = new Date("2026-05-01T08:00:00.000Z");
  let clocked: NodeTarget;
  let api: ApiClient;
  let store: Store;
  let customer: string;

  beforeAll(async () => {
    clocked = await nodeTarget({}, { clock: () => now });
    api = await connect(clocked);
    store = new Store(api, clocked.staffKey, (await createCategory(api, clocked.staffKey)).id);
    customer = (await signUp(api)).apiKey.key;
  });
  afterAll(async () => {
    await clocked?.close();
  });

  const count = async (sql: string, args: (string | number)[] = []) => Number((await clocked.db.execute({ sql, args })).rows[0]!.n);

  it("replays an Idempotency-Key for 24 h; after that the same key places a new order", async () => {
    const pet = await store.stocked(5);
    const key = uniqueName("day");
    const body = { petId: pet.id, quantity: 1 };
    const start = now;
    const first = await store.place(customer, body, { "Idempotency-Key": key });
    expect(first.status).toBe(201);

    now = new Date(start.getTime() + DAY - 1);
    const replay = await store.place(customer, body, { "Idempotency-Key": key });
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.body).toEqual(first.body);
    // Within the window a different body is still refused.
    now = new Date(start.getTime() + DAY);
    expectError(await store.place(customer, { petId: pet.id, quantity: 2 }, { "Idempotency-Key": key }), 422, "idempotency_key_reused");

    now = new Date(start.getTime() + DAY + 1);
    const fresh = await store.place(customer, body, { "Idempotency-Key": key });
    expect(fresh.status).toBe(201);
    expect(fresh.headers.get("idempotent-replayed")).toBeNull();
    expect(fresh.body.id).not.toBe(first.body.id);
    expect(fresh.headers.get("location")).toBe(`/store/orders/${fresh.body.id}`);
    // The key now remembers the new order, for the next 24 h.
    now = new Date(start.getTime() + DAY + 2);
    const replayOfFresh = await store.place(customer, body, { "Idempotency-Key": key });
    expect(replayOfFresh.headers.get("idempotent-replayed")).toBe("true");
    expect(replayOfFresh.body).toEqual(fresh.body);
    expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 3, status: "available" });
    // An expired key with a different body is simply a new key.
    now = new Date(start.getTime() + 3 * DAY);
    expect((await store.place(customer, { petId: pet.id, quantity: 3 }, { "Idempotency-Key": key })).status).toBe(201);
    expect(await store.inventory(pet.id)).toEqual({ petId: pet.id, quantity: 0, status: "pending" });
  });

  it("fulfilling without a shipDate records the server's now", async () => {
    now = new Date("2026-06-15T10:11:12.345Z");
    const pet = await store.stocked(2);
    const order = await store.order(customer, pet.id);
    now = new Date("2026-06-16T07:00:00.000Z");
    expect(await store.fulfil(order.id)).toEqual({ ...order, complete: true, shipDate: "2026-06-16T07:00:00.000Z" });
  });

  it("a refused order leaves no order, no idempotency row and no event; a replay adds nothing", async () => {
    const pet = await store.stocked(1);
    const key = uniqueName("rows");
    const snapshot = async () => ({
      orders: await count("SELECT count(*) AS n FROM orders WHERE pet_id = ?", [pet.id]),
      keys: await count("SELECT count(*) AS n FROM idempotency_keys WHERE key = ?", [key]),
      events: await count("SELECT count(*) AS n FROM events"),
      stock: await count("SELECT quantity AS n FROM inventory WHERE pet_id = ?", [pet.id]),
    });
    const before = await snapshot();
    expectError(await store.place(customer, { petId: pet.id, quantity: 2 }, { "Idempotency-Key": key }), 409, "insufficient_stock");
    expect(await snapshot()).toEqual(before);

    const placed = await store.place(customer, { petId: pet.id, quantity: 1 }, { "Idempotency-Key": key });
    expect(placed.status).toBe(201);
    const after = await snapshot();
    expect(after).toMatchObject({ orders: 1, keys: 1, stock: 0 });
    expect(after.events).toBeGreaterThan(before.events);
    expect((await store.place(customer, { petId: pet.id, quantity: 1 }, { "Idempotency-Key": key })).headers.get("idempotent-replayed")).toBe("true");
    expect(await snapshot()).toEqual(after);
    expectError(await store.place(customer, { petId: pet.id, quantity: 1 }), 409, "pet_not_available");
    expect(await snapshot()).toEqual(after);
  });

  it("every store write bumps the row versions it changes (If-Match relies on them)", async () => {
    const pet = await store.stocked(3);
    const versions = async () => {
      const rs = await clocked.db.execute({
        sql: "SELECT p.version AS pv, i.version AS iv FROM pets p JOIN inventory i ON i.pet_id = p.id WHERE p.id = ?",
        args: [pet.id],
      });
      return { pet: Number(rs.rows[0]!.pv), inventory: Number(rs.rows[0]!.iv) };
    };
    const v0 = await versions();
    const order = await store.order(customer, pet.id, 3);
    const v1 = await versions();
    expect(v1).toEqual({ pet: v0.pet + 1, inventory: v0.inventory + 1 }); // stock taken, pet pending
    const orderVersion = async () => Number((await clocked.db.execute({ sql: "SELECT version FROM orders WHERE id = ?", args: [order.id] })).rows[0]!.version);
    const o0 = await orderVersion();
    await store.update(order.id, { shipDate: "2027-01-01T00:00:00Z" });
    expect(await orderVersion()).toBe(o0 + 1);
    expect((await store.cancel(customer, order.id)).status).toBe(204);
    expect(await versions()).toEqual({ pet: v1.pet + 1, inventory: v1.inventory + 1 }); // stock back, pet available
  });
});
