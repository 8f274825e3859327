/**
 * Nothing lost (issue 4): the Node server is killed with SIGKILL in the middle
 * of a burst of order writes and restarted on the same database file. Every
 * order acknowledged with 201 before the kill must be readable afterwards,
 * stock + open order quantities must still add up to the initial stock, and
 * retrying the unanswered requests with their Idempotency-Keys must end with
 * exactly one order per request (no loss, no duplicate). Relies on the
 * durability settings of src/db/driver/open.ts (WAL + synchronous=FULL).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@libsql/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, startServer, type ServerProcess } from "../support/server-process";

interface Order {
  id: number;
  petId: number;
  quantity: number;
  complete: boolean;
}

const INITIAL_STOCK = 5000;
const REQUESTS = 300;
const CONCURRENCY = 30;
/** SIGKILL once this many orders were acknowledged. */
const KILL_AFTER = 100;

let dir: string;
let databaseUrl: string;
const servers: ServerProcess[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "petstore-crash-"));
  databaseUrl = `file:${join(dir, "petstore.db")}`;
});

afterAll(async () => {
  for (const server of servers) if (!server.exited()) await server.kill();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function ordersOfPet(url: string, staff: string, petId: number): Promise<Order[]> {
  const all: Order[] = [];
  let path: string | undefined = `/store/orders?petId=${petId}&limit=100`;
  while (path) {
    const res: { status: number; headers: Headers; body: Order[] } = await call<Order[]>(url, "GET", path, undefined, { key: staff });
    expect(res.status).toBe(200);
    all.push(...res.body);
    path = /^<([^>]+)>; rel="next"$/.exec(res.headers.get("link") ?? "")?.[1];
  }
  return all;
}

describe("SIGKILL in the middle of a write burst, then restart on the same database file", () => {
  it("loses no acknowledged order, keeps stock consistent, and idempotent retries complete the burst exactly once", async () => {
    const first = await startServer({ databaseUrl });
    servers.push(first);
    const staff = first.bootstrapKey!;
    expect(staff, first.output()).toMatch(/^psk_/);

    const category = await call(first.url, "POST", "/categories", { name: "Crash" }, { key: staff });
    const pet = await call(first.url, "POST", "/pets", { name: "Crash test dummy", categoryId: category.body.id }, { key: staff });
    expect(pet.status).toBe(201);
    const petId: number = pet.body.id;
    expect((await call(first.url, "PUT", `/store/inventory/${petId}`, { quantity: INITIAL_STOCK }, { key: staff })).status).toBe(200);
    const customers: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await call(first.url, "POST", "/accounts", { name: `Crash ${i}`, email: `crash${i}@example.com` });
      customers.push(res.body.apiKey.key);
    }

    const requests = Array.from({ length: REQUESTS }, (_, i) => ({
      key: customers[i % customers.length]!,
      body: { petId, quantity: (i % 3) + 1 },
      headers: { "Idempotency-Key": `burst-${i}` },
    }));
    type Outcome = { status: number; body: Order } | { error: string } | undefined;
    const outcomes: Outcome[] = Array(REQUESTS).fill(undefined);
    let next = 0;
    let acknowledged = 0;
    let killing: Promise<void> | undefined;
    const worker = async () => {
      while (next < REQUESTS && !killing) {
        const i = next++;
        const r = requests[i]!;
        try {
          const res = await call<Order>(first.url, "POST", "/store/orders", r.body, { key: r.key, headers: r.headers });
          outcomes[i] = { status: res.status, body: res.body };
          if (res.status === 201 && ++acknowledged === KILL_AFTER) killing = first.kill();
        } catch (error) {
          outcomes[i] = { error: String((error as Error).cause ?? error) };
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    await killing;
    expect(first.exited()).toBe(true);

    const answered = outcomes.flatMap((o, i) => (o && "status" in o ? [{ i, ...o }] : []));
    expect(answered.filter((o) => o.status !== 201).map((o) => [o.status, o.body])).toEqual([]);
    expect(answered.length).toBeGreaterThanOrEqual(KILL_AFTER);
    // The kill really happened mid-burst: some requests were in flight or never sent.
    expect(answered.length).toBeLessThan(REQUESTS);

    const second = await startServer({ databaseUrl });
    servers.push(second);
    expect(second.bootstrapKey, "the bootstrap key is printed only on the first start").toBeUndefined();

    // Every acknowledged order is there, unchanged, for staff and for its owner.
    for (const o of answered) {
      const asStaff = await call<Order>(second.url, "GET", `/store/orders/${o.body.id}`, undefined, { key: staff });
      expect(asStaff.status, `order ${o.body.id}`).toBe(200);
      expect(asStaff.body).toEqual(o.body);
      if (o.i % 25 === 0) expect((await call(second.url, "GET", `/store/orders/${o.body.id}`, undefined, { key: requests[o.i]!.key })).body).toEqual(o.body);
    }
    // Stock + open quantities = initial stock (orders committed without an answer count too).
    const afterCrash = await ordersOfPet(second.url, staff, petId);
    const stock = (await call(second.url, "GET", `/store/inventory/${petId}`)).body.quantity as number;
    expect(stock + afterCrash.reduce((sum, o) => sum + o.quantity, 0)).toBe(INITIAL_STOCK);
    expect(afterCrash.length).toBeGreaterThanOrEqual(answered.length);
    expect(new Set(afterCrash.map((o) => o.id))).toEqual(new Set([...afterCrash.map((o) => o.id), ...answered.map((o) => o.body.id)]));

    // Retry every unanswered request with its key: committed ones replay, the others are placed now.
    const retried = await Promise.all(
      requests.map(async (r, i) => {
        const before = outcomes[i];
        if (before && "status" in before) return { replayed: true, body: before.body };
        const res = await call<Order>(second.url, "POST", "/store/orders", r.body, { key: r.key, headers: r.headers });
        expect(res.status, JSON.stringify(res.body)).toBe(201);
        return { replayed: res.headers.get("idempotent-replayed") === "true", body: res.body };
      }),
    );
    // A replay after the restart can only be an order that was already in the database.
    const knownIds = new Set(afterCrash.map((o) => o.id));
    for (const r of retried) if (r.replayed) expect(knownIds.has(r.body.id)).toBe(true);
    const finalOrders = await ordersOfPet(second.url, staff, petId);
    expect(finalOrders).toHaveLength(REQUESTS);
    expect(new Set(retried.map((r) => r.body.id))).toEqual(new Set(finalOrders.map((o) => o.id)));
    const totalRequested = requests.reduce((sum, r) => sum + r.body.quantity, 0);
    expect((await call(second.url, "GET", `/store/inventory/${petId}`)).body).toEqual({ petId, quantity: INITIAL_STOCK - totalRequested, status: "available" });

    expect(await second.stop()).toBe(0);
    const db = createClient({ url: databaseUrl });
    try {
      expect((await db.execute("PRAGMA integrity_check")).rows[0]![0]).toBe("ok");
      const rs = await db.execute({ sql: "SELECT count(*) AS n, sum(quantity) AS q FROM orders WHERE pet_id = ?", args: [petId] });
      expect({ n: Number(rs.rows[0]!.n), q: Number(rs.rows[0]!.q) }).toEqual({ n: REQUESTS, q: totalRequested });
      const keys = await db.execute("SELECT count(*) AS n FROM idempotency_keys WHERE key LIKE 'burst-%' AND response_status = 201");
      expect(Number(keys.rows[0]!.n)).toBe(REQUESTS);
    } finally {
      db.close();
    }
  });
});
