/**
 * A 412 changes nothing (issue 11), on every If-Match path, with the race made
 * deterministic: the app runs over the real database through a client whose
 * next batch first lets another write commit — exactly what a concurrent
 * request does between this request's If-Match check (its read) and its
 * write. The loser must answer 412 `precondition_failed` and leave every row
 * and the event log exactly as the winner left them.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { parseConfig } from "../../src/config";
import type { Database } from "../../src/db/client";
import { nodeTarget, TEST_ENV, type NodeTarget } from "../support/node-target";

let target: NodeTarget;
let app: ReturnType<typeof createApp>;
let staff: string;
/** Runs (once) right before the next batch of `app`'s client, then clears itself. */
let beforeNextBatch: (() => Promise<void>) | undefined;

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}, via = app) {
  const h: Record<string, string> = { Authorization: `Bearer ${staff}`, ...headers };
  if (body !== undefined) h["Content-Type"] = "application/json";
  const res = await via.request(`http://localhost${path}`, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, etag: res.headers.get("ETag") };
}

/** Every row the API writes, as one comparable value. */
async function snapshot(): Promise<string> {
  const tables = ["categories", "pets", "inventory", "orders", "events"];
  const rows = await Promise.all(tables.map(async (t) => (await target.db.execute(`SELECT * FROM ${t} ORDER BY rowid`)).rows));
  return JSON.stringify(rows);
}

beforeAll(async () => {
  target = await nodeTarget();
  staff = target.staffKey;
  const real = target.db;
  const db: Database = {
    execute: (statement) => real.execute(statement),
    async batch(statements, mode) {
      const interleave = beforeNextBatch;
      beforeNextBatch = undefined;
      if (interleave) await interleave();
      return real.batch(statements, mode);
    },
  };
  app = createApp({ db, config: parseConfig(TEST_ENV), log: () => {} });
});

afterAll(async () => {
  await target?.close();
});

interface Race {
  /** The resource to read the ETag from (GET). */
  etagOf: string;
  /** The request that checked If-Match, then loses: [method, path, body]. */
  loser: [string, string, unknown?];
  /** The write that commits between the loser's check and its batch. */
  winner: [string, string, unknown?];
}

/** Fresh resources for each race: a category, a pet with stock 2 and an open order of 1. */
async function fixture() {
  const category = await call("POST", "/categories", { name: `Race ${Date.now()} ${Math.random()}` });
  const pet = await call("POST", "/pets", { name: "Racer", categoryId: category.body.id });
  await call("PUT", `/store/inventory/${pet.body.id}`, { quantity: 2 });
  const order = await call("POST", "/store/orders", { petId: pet.body.id, quantity: 1 });
  expect([category.status, pet.status, order.status]).toEqual([201, 201, 201]);
  return { categoryId: category.body.id as number, petId: pet.body.id as number, orderId: order.body.id as number };
}

const races: [string, (f: Awaited<ReturnType<typeof fixture>>) => Race][] = [
  [
    "PUT /store/inventory/{petId} (quantity 0 would make the pet pending)",
    (f) => ({
      etagOf: `/store/inventory/${f.petId}`,
      loser: ["PUT", `/store/inventory/${f.petId}`, { quantity: 0 }],
      winner: ["PUT", `/store/inventory/${f.petId}`, { quantity: 5 }],
    }),
  ],
  [
    "PUT /store/inventory/{petId} (after the pet's status changed)",
    (f) => ({
      etagOf: `/store/inventory/${f.petId}`,
      loser: ["PUT", `/store/inventory/${f.petId}`, { quantity: 0 }],
      winner: ["PATCH", `/pets/${f.petId}`, { status: "pending" }],
    }),
  ],
  [
    "PATCH /pets/{petId}",
    (f) => ({
      etagOf: `/pets/${f.petId}`,
      loser: ["PATCH", `/pets/${f.petId}`, { name: "Loser", status: "pending" }],
      winner: ["PATCH", `/pets/${f.petId}`, { name: "Winner" }],
    }),
  ],
  [
    "PUT /pets/{petId}",
    (f) => ({
      etagOf: `/pets/${f.petId}`,
      loser: ["PUT", `/pets/${f.petId}`, { name: "Loser", categoryId: f.categoryId, status: "pending" }],
      winner: ["PATCH", `/pets/${f.petId}`, { name: "Winner" }],
    }),
  ],
  [
    "DELETE /pets/{petId} (a pet without orders)",
    (f) => ({
      etagOf: `/pets/${f.petId}`,
      loser: ["DELETE", `/pets/${f.petId}`],
      winner: ["PATCH", `/pets/${f.petId}`, { name: "Winner" }],
    }),
  ],
  [
    "PATCH /categories/{categoryId}",
    (f) => ({
      etagOf: `/categories/${f.categoryId}`,
      loser: ["PATCH", `/categories/${f.categoryId}`, { description: "Loser" }],
      winner: ["PATCH", `/categories/${f.categoryId}`, { description: "Winner" }],
    }),
  ],
  [
    "DELETE /categories/{categoryId}",
    (f) => ({
      etagOf: `/categories/${f.categoryId}`,
      loser: ["DELETE", `/categories/${f.categoryId}`],
      winner: ["PATCH", `/categories/${f.categoryId}`, { description: "Winner" }],
    }),
  ],
  [
    "PATCH /store/orders/{orderId} (fulfil)",
    (f) => ({
      etagOf: `/store/orders/${f.orderId}`,
      loser: ["PATCH", `/store/orders/${f.orderId}`, { complete: true }],
      winner: ["PATCH", `/store/orders/${f.orderId}`, { shipDate: "2030-01-01T00:00:00.000Z" }],
    }),
  ],
  [
    "DELETE /store/orders/{orderId} (cancel)",
    (f) => ({
      etagOf: `/store/orders/${f.orderId}`,
      loser: ["DELETE", `/store/orders/${f.orderId}`],
      winner: ["PATCH", `/store/orders/${f.orderId}`, { shipDate: "2030-01-01T00:00:00.000Z" }],
    }),
  ],
];

describe("If-Match: a write that commits between the check and the batch makes this one 412 with no effect", () => {
  it.each(races)("%s", async (_, make) => {
    const f = await fixture();
    const race = make(f);
    // DELETE /pets needs a pet without orders: cancel the fixture's order first.
    if (race.loser[0] === "DELETE" && race.loser[1].startsWith("/pets/")) expect((await call("DELETE", `/store/orders/${f.orderId}`)).status).toBe(204);
    if (race.loser[0] === "DELETE" && race.loser[1].startsWith("/categories/")) {
      expect((await call("DELETE", `/store/orders/${f.orderId}`)).status).toBe(204);
      expect((await call("DELETE", `/pets/${f.petId}`)).status).toBe(204);
    }
    const etag = (await call("GET", race.etagOf)).etag!;
    expect(etag).toMatch(/^"/);
    let afterWinner = "";
    beforeNextBatch = async () => {
      const [method, path, body] = race.winner;
      // The winner goes through its own app on the same database (its batches are not intercepted).
      const won = await call(method, path, body, {}, createApp({ db: target.db, config: parseConfig(TEST_ENV), log: () => {} }));
      expect(won.status, JSON.stringify(won.body)).toBe(200);
      afterWinner = await snapshot();
    };
    const [method, path, body] = race.loser;
    const lost = await call(method, path, body, { "If-Match": etag });
    expect(beforeNextBatch, "the loser reached its batch").toBeUndefined();
    expect(lost.status, JSON.stringify(lost.body)).toBe(412);
    expect(lost.body.code).toBe("precondition_failed");
    expect(await snapshot()).toBe(afterWinner);
  });
});
