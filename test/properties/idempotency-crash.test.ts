/**
 * A crash around the write that stores an Idempotency-Key's response
 * (docs/api.md#idempotency-key: the resource, its events and the stored response commit in one batch).
 * A fault injected into the database client (no sleeps) makes the call that
 * carries the response's UPDATE of `idempotency_keys` fail, either before it
 * reaches the database (the process died first) or after it committed (the
 * answer was lost). The client retries with its key once the claim's 60 s are
 * over (injected clock): either nothing had been created and the retry
 * creates it, or the retry replays; never a second resource. And a refused
 * request (4xx) leaves no claim behind.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../src/db/client";
import { inProcessCaller } from "../support/in-process";
import { keyedPosts, scalar as scalarOf, unique } from "../support/keyed-posts";
import { nodeTarget, type NodeTarget } from "../support/node-target";

/** The statement that stores a response on a key's row (middleware, order batch or creation batch). */
const RECORDS_RESPONSE = /^update "idempotency_keys" set "response_status"/i;

/** The armed fault: the next database call that records a response fails, `before` sending it or `after` it committed. */
let fault: "before" | "after" | undefined;

/** The SQL texts of a client call's first argument (one statement, or a batch). */
function texts(arg: unknown): string[] {
  const list = Array.isArray(arg) ? arg : [arg];
  return list.map((s) => (typeof s === "string" ? s : Array.isArray(s) ? String(s[0]) : String((s as { sql?: string })?.sql ?? "")));
}

/** `db` failing the call that records a response while a fault is armed (same connection). */
function faulty(db: Database): Database {
  const guarded =
    <A, R>(send: (arg: A) => Promise<R>) =>
    async (arg: A): Promise<R> => {
      const mode = fault;
      if (mode === undefined || !texts(arg).some((text) => RECORDS_RESPONSE.test(text))) return send(arg);
      fault = undefined;
      if (mode === "before") throw new Error("injected crash before the response was recorded");
      await send(arg);
      throw new Error("injected crash after the response was recorded");
    };
  return {
    execute: guarded((statement) => db.execute(statement)),
    batch: (statements, mode) => guarded((list: typeof statements) => db.batch(list, mode))(statements),
  };
}

let target: NodeTarget;
let db: Database;
let now = new Date("2026-11-20T12:00:00.000Z");
const call = inProcessCaller(() => target.app);
let staff: string;
let categoryId: number;

beforeAll(async () => {
  target = await nodeTarget({}, { db: () => db, clock: () => now });
  db = faulty(target.db);
  staff = target.staffKey;
  categoryId = (await call("POST", "/categories", staff, { name: "Crashes" })).body.id;
});

afterAll(async () => {
  await target?.close();
});

/** One number from the test database. */
const scalar = (sql: string, args: (string | number)[] = []) => scalarOf(target.db, sql, args);

const ENDPOINTS = keyedPosts(
  () => target.db,
  () => categoryId,
);

describe("a crash around recording the response, then a retry after the claim's 60 s", () => {
  for (const endpoint of ENDPOINTS) {
    for (const mode of ["before", "after"] as const) {
      it(`POST ${endpoint.path}, crash ${mode} the response is recorded: one resource, and the retries replay it`, async () => {
        const headers = { "Idempotency-Key": unique("crash") };
        const body = endpoint.body();
        fault = mode;
        const crashed = await call("POST", endpoint.path, staff, body, headers);
        expect(fault, "the fault fired").toBeUndefined();
        expect(crashed.status, JSON.stringify(crashed.body)).toBeGreaterThanOrEqual(500);
        now = new Date(now.getTime() + 61_000);
        const retry = await call("POST", endpoint.path, staff, body, headers);
        expect(retry.status, JSON.stringify(retry.body)).toBeLessThan(300);
        expect(await endpoint.count(body), "resources created").toBe(1);
        const again = await call("POST", endpoint.path, staff, body, headers);
        expect([again.status < 300, again.headers.get("idempotent-replayed"), again.body.id]).toEqual([true, "true", retry.body.id]);
        expect(await endpoint.count(body), "resources created").toBe(1);
      });
    }
  }
});

describe("a refused request leaves no claim behind", () => {
  const refusals: [string, string, () => Record<string, unknown>, number][] = [
    ["POST /pets, unknown category", "/pets", () => ({ name: unique("pet"), categoryId: 999_999 }), 422],
    ["POST /categories, taken name", "/categories", () => ({ name: "Crashes" }), 409],
    ["POST /webhooks, refused target", "/webhooks", () => ({ url: "ftp://example.com/hook", events: ["pet.created"] }), 400],
  ];
  for (const [name, path, body, status] of refusals) {
    it(`${name}: ${status}, no row for its key, and the retry runs again`, async () => {
      const key = unique("refused");
      const res = await call("POST", path, staff, body(), { "Idempotency-Key": key });
      expect(res.status, JSON.stringify(res.body)).toBe(status);
      expect(await scalar("SELECT count(*) FROM idempotency_keys WHERE key = ?", [key])).toBe(0);
    });
  }
});
