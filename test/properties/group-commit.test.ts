/**
 * Group commit (issue 16, src/db/driver/group-commit.ts), through HTTP on the app
 * over a real database file: the writes of concurrent requests share
 * transactions, and each request keeps its own outcome when one of a merged
 * group fails.
 *
 * How sharing is observed: every committed transaction appends at least one
 * frame (its commit frame) to the write-ahead log, so after the WAL is
 * emptied, N writes committed one by one leave at least N frames;
 * `PRAGMA wal_checkpoint(PASSIVE)` reports the frame count (`log`).
 */
import type { InStatement } from "@libsql/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { parseConfig } from "../../src/config";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Database } from "../../src/db/client";
import { groupCommit } from "../../src/db/driver/group-commit";
import { NativeFile } from "../../src/db/driver/native-file";
import { nodeSettings } from "../../src/config";
import { openDatabase } from "../../src/db/driver/open";
import { createCategory } from "../../src/services/categories.service";
import { dispatchDue } from "../../src/services/webhooks/dispatch";
import { nodeTarget, TEST_ENV, type NodeTarget } from "../support/node-target";

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
  const rs = await target.db.execute(truncate ? "PRAGMA wal_checkpoint(TRUNCATE)" : "PRAGMA wal_checkpoint(PASSIVE)");
  return Number(rs.rows[0]!.log);
}

async function count(sql: string): Promise<number> {
  return Number((await target.db.execute(sql)).rows[0]![0]);
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

describe("batch boundaries (merged batches share one connection)", () => {
  it("no write batch of the API begins by reading changes() or last_insert_rowid(), which would see the previous batch's statement", async () => {
    const batches: InStatement[][] = [];
    const real = target.db;
    // Every write batch, as the port receives it (src/db/plan.ts sends a plan's batch with "write").
    const db: Database = {
      execute: (statement) => real.execute(statement),
      batch(statements, mode) {
        if (mode === "write") batches.push(statements);
        return real.batch(statements, mode);
      },
    };
    const config = parseConfig(TEST_ENV);
    const app = createApp({ db, config, log: () => {} });
    const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
      const res = await app.request(`http://localhost${path}`, {
        method,
        headers: { Authorization: `Bearer ${target.staffKey}`, ...(body === undefined ? {} : { "Content-Type": "application/json" }), ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : null };
    };
    const run = Date.now().toString(36);
    // Every kind of write the API makes, successful and refused.
    const category = await call("POST", "/categories", { name: `audit ${run}` });
    expect(category.status).toBe(201);
    expect((await call("POST", "/categories", { name: `audit ${run}` })).status).toBe(409);
    expect((await call("PATCH", `/categories/${category.body.id}`, { description: "d" })).status).toBe(200);
    const pet = await call("POST", "/pets", { name: "Audit", categoryId: category.body.id }, { "Idempotency-Key": `pet-${run}` });
    expect(pet.status).toBe(201);
    expect((await call("POST", "/pets", { name: "Nowhere", categoryId: 999_999 })).status).toBe(422);
    expect((await call("PUT", `/store/inventory/${pet.body.id}`, { quantity: 3 })).status).toBe(200);
    const order = await call("POST", "/store/orders", { petId: pet.body.id, quantity: 1 }, { "Idempotency-Key": `order-${run}` });
    expect(order.status).toBe(201);
    expect((await call("POST", "/store/orders", { petId: pet.body.id, quantity: 99 })).status).toBe(409);
    const second = await call("POST", "/store/orders", { petId: pet.body.id, quantity: 2 });
    expect(second.status).toBe(201);
    expect((await call("PATCH", `/store/orders/${order.body.id}`, { complete: true })).status).toBe(200);
    expect((await call("DELETE", `/store/orders/${second.body.id}`)).status).toBe(204);
    expect((await call("PATCH", `/pets/${pet.body.id}`, { status: "sold" })).status).toBe(200);
    const other = await call("POST", "/pets", { name: "Gone", categoryId: category.body.id });
    expect((await call("DELETE", `/pets/${other.body.id}`)).status).toBe(204);
    const key = await call("POST", "/accounts/me/keys", { name: "audit" });
    expect(key.status).toBe(201);
    expect((await call("DELETE", `/accounts/me/keys/${key.body.id}`)).status).toBe(204);
    expect((await call("POST", "/accounts", { name: "Audit", email: `audit-${run}@example.com` })).status).toBe(201);
    const hook = await call("POST", "/webhooks", { url: "https://hooks.example.com/audit", events: ["order.placed"] });
    expect(hook.status).toBe(201);
    // The dispatcher's batches: fan-out, claims and the recorded outcome of a delivery.
    await dispatchDue(db, { config, now: () => new Date(), fetch: async () => new Response("ok", { status: 200 }) });
    expect((await call("DELETE", `/webhooks/${hook.body.id}`)).status).toBe(204);

    expect(batches.length).toBeGreaterThan(15);
    // The guards exist (later in their batches): what the check looks for is really there.
    const text = (statement: InStatement) => (typeof statement === "string" ? statement : statement.sql);
    expect(batches.filter((statements) => statements.slice(1).some((statement) => /\bchanges\(\)/.test(text(statement)))).length).toBeGreaterThan(5);
    const readsConnectionState = (statements: InStatement[]) => /\b(changes|last_insert_rowid)\s*\(/i.test(text(statements[0]!));
    const offending = batches.filter(readsConnectionState).map((statements) => JSON.stringify(statements[0]));
    expect(offending).toEqual([]);
  });
});

describe("closing with writes queued", () => {
  it("the writes queued when the database closes commit before it closes; none is refused or lost", async () => {
    const dir = mkdtempSync(join(tmpdir(), "petstore-group-close-"));
    try {
      const url = `file:${join(dir, "close.db")}`;
      const first = await openDatabase(nodeSettings({ DATABASE_URL: url }).database);
      const writes = Array.from({ length: 10 }, (_, i) => createCategory(first.db, { name: `closing ${i}` }, new Date()));
      await first.close();
      expect((await Promise.allSettled(writes)).map((r) => r.status)).toEqual(Array(10).fill("fulfilled"));
      const again = await openDatabase(nodeSettings({ DATABASE_URL: url }).database);
      try {
        expect(await again.db.execute("SELECT count(*) AS n FROM categories WHERE name LIKE 'closing %'").then((rs) => Number(rs.rows[0]!.n))).toBe(10);
      } finally {
        await again.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a merged write whose answer is lost is not sent again: each of its batches gets the error, and each row is stored once", async () => {
    const dir = mkdtempSync(join(tmpdir(), "petstore-lost-"));
    const file = new NativeFile(join(dir, "lost.db"));
    try {
      await file.execute("CREATE TABLE t (x INTEGER NOT NULL)");
      // A libSQL server that commits the merged transaction, then loses its answer (as a time limit does).
      let lose = true;
      const lossy: Database = {
        execute: (statement) => file.execute(statement),
        async batch(statements, mode) {
          const results = await file.batch(statements, mode);
          if (lose && mode === "write" && statements.length > 1) {
            lose = false;
            throw new TypeError("fetch failed: the database did not answer");
          }
          return results;
        },
      };
      const db = groupCommit(lossy);
      const outcomes = await Promise.allSettled([1, 2, 3].map((x) => db.batch([{ sql: "INSERT INTO t (x) VALUES (?)", args: [x] }], "write")));
      expect(outcomes.map((outcome) => outcome.status)).toEqual(["rejected", "rejected", "rejected"]);
      const stored = await file.execute("SELECT x, count(*) AS n FROM t GROUP BY x ORDER BY x");
      expect(stored.rows.map((row) => [row.x, row.n])).toEqual([
        [1, 1],
        [2, 1],
        [3, 1],
      ]);
    } finally {
      file.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
