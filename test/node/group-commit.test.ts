/**
 * Group commit (issue 16, src/db/group-commit.ts), through HTTP on the app
 * over a real database file: the writes of concurrent requests share
 * transactions, and each request keeps its own outcome when one of a merged
 * group fails.
 *
 * How sharing is observed: every committed transaction appends at least one
 * frame (its commit frame) to the write-ahead log, so after the WAL is
 * emptied, N writes committed one by one leave at least N frames;
 * `PRAGMA wal_checkpoint(PASSIVE)` reports the frame count (`log`).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nodeTarget, type NodeTarget } from "../support/node-target";

let target: NodeTarget;

async function post(path: string, body: unknown): Promise<{ status: number; body: { id?: number; code?: string } }> {
  const res = await target.fetch(path, {
    method: "POST",
    headers: { Authorization: `Bearer ${target.staffKey}`, "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as { id?: number; code?: string } };
}

/** Frames now in the WAL (after emptying it with `walFrames(true)`). */
async function walFrames(truncate = false): Promise<number> {
  const rs = await target.db.$client.execute(truncate ? "PRAGMA wal_checkpoint(TRUNCATE)" : "PRAGMA wal_checkpoint(PASSIVE)");
  return Number(rs.rows[0]!.log);
}

async function count(sql: string): Promise<number> {
  return Number((await target.db.$client.execute(sql)).rows[0]![0]);
}

beforeAll(async () => {
  target = await nodeTarget();
});

afterAll(async () => {
  await target.close();
});

describe("group commit of concurrent writes", () => {
  it("60 concurrent creations commit in fewer transactions than requests, and every one is stored with its event", async () => {
    const run = Date.now().toString(36);
    await walFrames(true);
    expect(await walFrames()).toBe(0);
    const results = await Promise.all(Array.from({ length: 60 }, (_, i) => post("/categories", { name: `group ${run} ${i}` })));
    expect(results.map((r) => r.status)).toEqual(Array(60).fill(201));
    expect(new Set(results.map((r) => r.body.id)).size).toBe(60);
    // One transaction per request would have left at least 60 commit frames.
    expect(await walFrames()).toBeLessThan(60);
    expect(await count(`SELECT count(*) FROM categories WHERE name LIKE 'group ${run} %'`)).toBe(60);
    expect(await count(`SELECT count(*) FROM events WHERE type = 'category.created' AND json_extract(data, '$.name') LIKE 'group ${run} %'`)).toBe(60);
  });

  it("a write that fails inside a merged group fails alone: duplicates get 409, every other request of the group 201", async () => {
    const run = Date.now().toString(36);
    // 40 requests at once: names 0..29, and names 0..9 a second time.
    const names = [...Array.from({ length: 30 }, (_, i) => `dup ${run} ${i}`), ...Array.from({ length: 10 }, (_, i) => `dup ${run} ${i}`)];
    const results = await Promise.all(names.map((name) => post("/categories", { name })));
    const created = results.filter((r) => r.status === 201);
    const refused = results.filter((r) => r.status === 409);
    expect(created).toHaveLength(30);
    expect(refused).toHaveLength(10);
    expect(refused.every((r) => r.body.code === "duplicate_name")).toBe(true);
    // Each of the 10 names was refused exactly once: the other request of the pair was stored.
    for (let i = 0; i < 10; i++) {
      const pair = results.filter((_, index) => names[index] === `dup ${run} ${i}`).map((r) => r.status);
      expect(pair.sort()).toEqual([201, 409]);
    }
    expect(await count(`SELECT count(*) FROM categories WHERE name LIKE 'dup ${run} %'`)).toBe(30);
    expect(await count(`SELECT count(*) FROM events WHERE type = 'category.created' AND json_extract(data, '$.name') LIKE 'dup ${run} %'`)).toBe(30);
  });

  it("orders at once on one pet's stock: exactly the stock is sold across merged transactions", async () => {
    const category = await post("/categories", { name: `stock ${Date.now().toString(36)}` });
    const pet = await post("/pets", { name: "Grouped", categoryId: category.body.id });
    const put = await target.fetch(`/store/inventory/${pet.body.id}`, {
      method: "PUT",
      headers: { Authorization: `Bearer ${target.staffKey}`, "Content-Type": "application/json" },
      body: JSON.stringify({ quantity: 25 }),
    });
    expect(put.status).toBe(200);
    const results = await Promise.all(Array.from({ length: 80 }, () => post("/store/orders", { petId: pet.body.id, quantity: 1 })));
    expect(results.filter((r) => r.status === 201)).toHaveLength(25);
    expect(results.filter((r) => r.status === 409)).toHaveLength(55);
    expect(await count(`SELECT quantity FROM inventory WHERE pet_id = ${pet.body.id}`)).toBe(0);
    expect(await count(`SELECT count(*) FROM orders WHERE pet_id = ${pet.body.id}`)).toBe(25);
  });
});
