/**
 * Stock rules under real concurrency (issue 4, docs/api.md#stock-and-ordering "Every rule holds
 * under concurrency"): the Node server as a child process over a real libSQL
 * file, hit by hundreds of simultaneous HTTP requests, then the database file
 * itself is checked.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient, type Client } from "@libsql/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, startServer, type ServerProcess } from "../support/server-process";

interface Order {
  id: number;
  petId: number;
  quantity: number;
  complete: boolean;
  shipDate?: string;
}

const CUSTOMERS = 20;
const PER_CUSTOMER = 10;

let dir: string;
let server: ServerProcess;
let staff: string;
let customers: string[];
let categoryId: number;
/** A second connection to the server's database file (WAL: readers never block the writer). */
let reader: Client;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "petstore-concurrency-"));
  const databaseUrl = `file:${join(dir, "petstore.db")}`;
  server = await startServer({ databaseUrl });
  expect(server.bootstrapKey, server.output()).toMatch(/^psk_/);
  staff = server.bootstrapKey!;
  const category = await call(server.url, "POST", "/categories", { name: `Concurrency ${Date.now()}` }, { key: staff });
  expect(category.status).toBe(201);
  categoryId = category.body.id;
  customers = await Promise.all(
    Array.from({ length: CUSTOMERS }, async (_, i) => {
      const res = await call(server.url, "POST", "/accounts", { name: `Customer ${i}`, email: `customer${i}.${Date.now()}@example.com` });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      return res.body.apiKey.key as string;
    }),
  );
  reader = createClient({ url: databaseUrl });
});

afterAll(async () => {
  reader?.close();
  if (server && !server.exited()) expect(await server.stop()).toBe(0);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** A new pet with `stock` units (PUT /store/inventory). */
async function stockedPet(stock: number): Promise<number> {
  const pet = await call(server.url, "POST", "/pets", { name: `Stocked ${Date.now()}`, categoryId }, { key: staff });
  expect(pet.status).toBe(201);
  const inventory = await call(server.url, "PUT", `/store/inventory/${pet.body.id}`, { quantity: stock }, { key: staff });
  expect(inventory.body).toEqual({ petId: pet.body.id, quantity: stock, status: "available" });
  return pet.body.id;
}

/** Every order of the pet as staff see it, following Link: rel="next". */
async function ordersOfPet(petId: number): Promise<Order[]> {
  const all: Order[] = [];
  let path: string | undefined = `/store/orders?petId=${petId}&limit=17`;
  while (path) {
    const res: { status: number; headers: Headers; body: Order[] } = await call<Order[]>(server.url, "GET", path, undefined, { key: staff });
    expect(res.status).toBe(200);
    all.push(...res.body);
    path = /^<([^>]+)>; rel="next"$/.exec(res.headers.get("link") ?? "")?.[1];
  }
  return all;
}

/** Mulberry32: a tiny seeded PRNG in [0, 1), so "random" test data is reproducible. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The pet's row, its stock and its open orders, read from the database file. */
async function rows(petId: number) {
  const rs = await reader.execute({
    sql: `SELECT p.status, i.quantity,
            (SELECT count(*) FROM orders WHERE pet_id = p.id AND complete = 0) AS open_orders,
            (SELECT coalesce(sum(quantity), 0) FROM orders WHERE pet_id = p.id AND complete = 0) AS open_quantity,
            (SELECT count(*) FROM orders WHERE pet_id = p.id) AS all_orders
          FROM pets p JOIN inventory i ON i.pet_id = p.id WHERE p.id = ?`,
    args: [petId],
  });
  const row = rs.rows[0]!;
  return {
    status: String(row.status),
    quantity: Number(row.quantity),
    openOrders: Number(row.open_orders),
    openQuantity: Number(row.open_quantity),
    allOrders: Number(row.all_orders),
  };
}

describe("POST /store/orders under concurrency (real server, real database file)", () => {
  it("200 simultaneous orders of 1 from 20 customers for a stock of 50 → exactly 50 × 201 and 150 × 409", async () => {
    const petId = await stockedPet(50);
    const requests = customers.flatMap((key) => Array.from({ length: PER_CUSTOMER }, () => key));
    const results = await Promise.all(
      requests.map((key) => call<Order & { code?: string }>(server.url, "POST", "/store/orders", { petId, quantity: 1 }, { key })),
    );

    const accepted = results.filter((r) => r.status === 201);
    const refused = results.filter((r) => r.status === 409);
    expect(results.filter((r) => r.status !== 201 && r.status !== 409).map((r) => [r.status, r.body])).toEqual([]);
    expect(accepted).toHaveLength(50);
    expect(refused).toHaveLength(150);
    // Once the stock is 0 the pet is pending (docs/api.md#stock-and-ordering), so late requests see pet_not_available.
    for (const r of refused) expect(["insufficient_stock", "pet_not_available"]).toContain(r.body.code);
    for (const r of accepted) {
      expect(r.body).toEqual({ id: expect.any(Number), petId, quantity: 1, complete: false });
      expect(r.headers.get("location")).toBe(`/store/orders/${r.body.id}`);
    }
    const ids = accepted.map((r) => r.body.id).sort((a, b) => a - b);
    expect(new Set(ids).size).toBe(50);

    expect((await call(server.url, "GET", `/store/inventory/${petId}`)).body).toEqual({ petId, quantity: 0, status: "pending" });
    expect((await call(server.url, "GET", `/pets?id=${petId}`)).body[0].status).toBe("pending");
    expect((await ordersOfPet(petId)).map((o) => o.id)).toEqual(ids);
    // Each customer sees exactly the orders that were accepted for them.
    const acceptedFor = new Map<string, number[]>(customers.map((key) => [key, []]));
    results.forEach((r, i) => {
      if (r.status === 201) acceptedFor.get(requests[i]!)!.push(r.body.id);
    });
    for (const key of customers) {
      const mine = await call<Order[]>(server.url, "GET", `/store/orders?petId=${petId}&limit=100`, undefined, { key });
      expect(mine.body.map((o) => o.id)).toEqual(acceptedFor.get(key)!.sort((a, b) => a - b));
    }
    expect(await rows(petId)).toEqual({ status: "pending", quantity: 0, openOrders: 50, openQuantity: 50, allOrders: 50 });
  });

  it("mixed quantities (1..5): accepted quantities never exceed the stock, and stock = initial − accepted", async () => {
    // 119 is no sum the first requests hit exactly, so the stock passes through small values (insufficient_stock).
    const initial = 119;
    const petId = await stockedPet(initial);
    // Quantities 1..5 from a seeded generator: varied, and the same on every run.
    const random = mulberry32(7);
    const requests = Array.from({ length: CUSTOMERS * PER_CUSTOMER }, (_, i) => ({
      key: customers[i % CUSTOMERS]!,
      quantity: 1 + Math.floor(random() * 5),
    }));
    const results = await Promise.all(
      requests.map((r) => call<Order & { code?: string }>(server.url, "POST", "/store/orders", { petId, quantity: r.quantity }, { key: r.key })),
    );
    expect(results.filter((r) => r.status !== 201 && r.status !== 409).map((r) => [r.status, r.body])).toEqual([]);
    const acceptedSum = results.reduce((sum, r, i) => sum + (r.status === 201 ? requests[i]!.quantity : 0), 0);
    expect(acceptedSum).toBeGreaterThan(0);
    expect(acceptedSum).toBeLessThanOrEqual(initial);

    const final = (await call(server.url, "GET", `/store/inventory/${petId}`)).body;
    expect(final.quantity).toBe(initial - acceptedSum);
    expect(final.status).toBe(final.quantity === 0 ? "pending" : "available");
    // Stock only goes down: a request refused for insufficient stock asked for more than is left now.
    results.forEach((r, i) => {
      if (r.status !== 409) return;
      if (r.body.code === "insufficient_stock") expect(requests[i]!.quantity).toBeGreaterThan(final.quantity);
      else expect(r.body.code === "pet_not_available" && final.quantity === 0).toBe(true);
    });
    const orders = await ordersOfPet(petId);
    expect(orders.reduce((sum, o) => sum + o.quantity, 0)).toBe(acceptedSum);
    expect(orders).toHaveLength(results.filter((r) => r.status === 201).length);
    expect(await rows(petId)).toEqual({
      status: final.status,
      quantity: initial - acceptedSum,
      openOrders: orders.length,
      openQuantity: acceptedSum,
      allOrders: orders.length,
    });
  });

  it("20 simultaneous identical requests with one Idempotency-Key → one order, 20 identical responses", async () => {
    const petId = await stockedPet(10);
    const key = customers[0]!;
    const headers = { "Idempotency-Key": `concurrent-${Date.now()}` };
    const results = await Promise.all(
      Array.from({ length: 20 }, () => call<Order>(server.url, "POST", "/store/orders", { petId, quantity: 2 }, { key, headers })),
    );
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(201));
    const first = results[0]!;
    for (const r of results) {
      expect(r.body).toEqual(first.body);
      expect(r.headers.get("location")).toBe(`/store/orders/${first.body.id}`);
    }
    // Exactly one of them placed it; the others are replays.
    expect(results.filter((r) => r.headers.get("idempotent-replayed") === "true")).toHaveLength(19);
    expect(await ordersOfPet(petId)).toEqual([first.body]);
    expect(await rows(petId)).toMatchObject({ quantity: 8, openOrders: 1, allOrders: 1 });
  });

  it("20 simultaneous requests with one Idempotency-Key but different bodies → one order, 19 × 422 idempotency_key_reused", async () => {
    const petId = await stockedPet(100);
    const key = customers[1]!;
    const headers = { "Idempotency-Key": `racing-${Date.now()}` };
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => call<Order & { code?: string }>(server.url, "POST", "/store/orders", { petId, quantity: i + 1 }, { key, headers })),
    );
    const placed = results.filter((r) => r.status === 201);
    expect(placed).toHaveLength(1);
    expect(results.filter((r) => r.status === 422).every((r) => r.body.code === "idempotency_key_reused")).toBe(true);
    expect(results.filter((r) => r.status === 422)).toHaveLength(19);
    const orders = await ordersOfPet(petId);
    expect(orders).toEqual([placed[0]!.body]);
    expect(await rows(petId)).toMatchObject({ quantity: 100 - orders[0]!.quantity, allOrders: 1 });
  });
});
