/**
 * Statements are built once per process (docs/architecture.md#writes-one-batch-named-plans): with a new database
 * handle for every request, as on Workers (src/worker.ts), serving requests
 * after one warm-up pass builds no Drizzle statement. A build is counted by
 * wrapping the SQLite dialect's `sqlToQuery`, which every query built or
 * prepared by Drizzle goes through.
 */
import { sql } from "drizzle-orm";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { parseConfig } from "../../src/config";
import { type Database, qb } from "../../src/db/client";
import { pets } from "../../src/db/schema";
import { inProcessCaller } from "../support/in-process";
import { nodeTarget, TEST_ENV, type NodeTarget } from "../support/node-target";

let target: NodeTarget;
let app: ReturnType<typeof createApp>;
let handles = 0;
let customer: string;
let builds = 0;
const sqlToQuery = SQLiteAsyncDialect.prototype.sqlToQuery;

const call = inProcessCaller(() => app);

/** Every kind of request measured, once; `n` keeps names and keys apart between passes. Returns each request's status. */
async function pass(n: number): Promise<Record<string, number>> {
  const staff = target.staffKey;
  const statuses: Record<string, number> = {};
  const record = async (name: string, response: Promise<{ status: number; body: { id?: number } | null }>) => {
    const res = await response;
    statuses[name] = res.status;
    return res.body?.id ?? 0;
  };
  const category = await record("POST /categories", call("POST", "/categories", staff, { name: `Once ${n}` }));
  await record("GET /categories/{id}", call("GET", `/categories/${category}`));
  await record("GET /categories", call("GET", "/categories?limit=5"));
  await record("PATCH /categories/{id}", call("PATCH", `/categories/${category}`, staff, { description: `pass ${n}` }));
  const pet = await record("POST /pets", call("POST", "/pets", staff, { name: `Once ${n}`, categoryId: category }));
  await record("GET /pets/{id}", call("GET", `/pets/${pet}`));
  await record("GET /pets?status&categoryId", call("GET", `/pets?status=available&categoryId=${category}`));
  await record("GET /pets?id", call("GET", `/pets?id=${pet}`));
  await record("PUT /store/inventory/{id}", call("PUT", `/store/inventory/${pet}`, staff, { quantity: 5 }));
  await record("GET /store/inventory/{id}", call("GET", `/store/inventory/${pet}`));
  await record("GET /store/inventory?status", call("GET", "/store/inventory?status=available"));
  const placed = await record("POST /store/orders", call("POST", "/store/orders", customer, { petId: pet, quantity: 1 }));
  const keyed = await record(
    "POST /store/orders with Idempotency-Key",
    call("POST", "/store/orders", customer, { petId: pet, quantity: 1 }, { "Idempotency-Key": `once-${n}` }),
  );
  await record("POST /store/orders replayed", call("POST", "/store/orders", customer, { petId: pet, quantity: 1 }, { "Idempotency-Key": `once-${n}` }));
  await record("GET /store/orders", call("GET", `/store/orders?petId=${pet}`, customer));
  await record("GET /store/orders/{id}", call("GET", `/store/orders/${placed}`, customer));
  await record("PATCH /store/orders/{id} reschedule", call("PATCH", `/store/orders/${keyed}`, staff, { shipDate: "2026-12-24T10:00:00Z" }));
  await record("PATCH /store/orders/{id} fulfil", call("PATCH", `/store/orders/${placed}`, staff, { complete: true }));
  await record("DELETE /store/orders/{id}", call("DELETE", `/store/orders/${keyed}`, customer));
  await record("PATCH /pets/{id}", call("PATCH", `/pets/${pet}`, staff, { name: `Once ${n} renamed` }));
  const spare = await record("POST /categories spare", call("POST", "/categories", staff, { name: `Spare ${n}` }));
  const other = await record("POST /pets other", call("POST", "/pets", staff, { name: `Other ${n}`, categoryId: spare }));
  await record("DELETE /pets/{id}", call("DELETE", `/pets/${other}`, staff));
  await record("DELETE /categories/{id}", call("DELETE", `/categories/${spare}`, staff));
  return statuses;
}

beforeAll(async () => {
  target = await nodeTarget();
  const real = target.db;
  // A new database per request, the way the Worker gets its database.
  const perRequest = (): Database => {
    handles += 1;
    return { execute: (statement) => real.execute(statement), batch: (statements, mode) => real.batch(statements, mode) };
  };
  app = createApp({ db: perRequest, config: parseConfig(TEST_ENV), log: () => {} });
  customer = (await call("POST", "/accounts", undefined, { name: "Once", email: "once@example.com" })).body.apiKey.key;
  SQLiteAsyncDialect.prototype.sqlToQuery = function (...args) {
    builds += 1;
    return sqlToQuery.apply(this, args);
  };
});

afterAll(async () => {
  SQLiteAsyncDialect.prototype.sqlToQuery = sqlToQuery;
  await target?.close();
});

describe("statements built once per process", () => {
  it("the count sees a statement being built", () => {
    builds = 0;
    qb.select({ id: pets.id }).from(pets).where(sql`1`).prepare();
    expect(builds).toBe(1);
  });

  it("after a warm-up pass, requests on a new database handle each build no statement", async () => {
    const warm = await pass(1);
    builds = 0;
    handles = 0;
    const measured = await pass(2);
    expect(measured).toEqual(warm);
    expect(Object.values(measured).every((status) => status >= 200 && status < 300)).toBe(true);
    expect(handles).toBe(Object.keys(measured).length);
    expect(builds).toBe(0);
  });
});
