/**
 * Idempotency-Key races across endpoints (docs/api.md#idempotency-key: a key belongs to the
 * account, whatever its endpoint). The first request is held inside the app
 * by a gate (no sleeps), after the key checks and before its one batch, while
 * a second request of the same account sends the same key, to the same POST
 * or to another. Each batch claims, creates and records at once, so exactly
 * one of them creates: the other replays that response (same request) or is
 * 422 `idempotency_key_reused` (another endpoint), and creates nothing. (A
 * claim still held by a running request is 409 on every endpoint:
 * test/scenarios/idempotency.scenarios.ts.)
 */
import type { MiddlewareHandler } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AppEnv } from "../../src/http/context";
import { inProcessCaller } from "../support/in-process";
import { keyedPosts, scalar as scalarOf, unique } from "../support/keyed-posts";
import { nodeTarget, type NodeTarget } from "../support/node-target";

/** A one-shot gate: the first request `match` accepts waits inside the app until `release()`. */
interface Hold {
  match: (path: string, key: string | undefined) => boolean;
  entered: Promise<void>;
  release: () => void;
  done: boolean;
  enter: () => void;
  wait: Promise<void>;
}

const holds: Hold[] = [];

/** Hold the next request to `path` with Idempotency-Key `key` inside the app (after authentication and the key checks, before the handler). */
function hold(path: string, key: string): Hold {
  let enter!: () => void;
  let release!: () => void;
  const entered = new Promise<void>((resolve) => {
    enter = resolve;
  });
  const wait = new Promise<void>((resolve) => {
    release = resolve;
  });
  const h: Hold = { match: (p, k) => p === path && k === key, entered, release, done: false, enter, wait };
  holds.push(h);
  return h;
}

const gate: MiddlewareHandler<AppEnv> = async (c, next) => {
  const h = holds.find((candidate) => !candidate.done && candidate.match(c.req.path, c.req.header("Idempotency-Key")));
  if (h) {
    h.done = true;
    h.enter();
    await h.wait;
  }
  await next();
};

let target: NodeTarget;
const call = inProcessCaller(() => target.app);
let staff: string;
let categoryId: number;
let petId: number;

beforeAll(async () => {
  target = await nodeTarget({}, { middleware: [gate] });
  staff = target.staffKey;
  categoryId = (await call("POST", "/categories", staff, { name: "Races" })).body.id;
  petId = (await call("POST", "/pets", staff, { name: "Stocked", categoryId })).body.id;
  expect((await call("PUT", `/store/inventory/${petId}`, staff, { quantity: 50 })).status).toBe(200);
});

afterAll(async () => {
  await target?.close();
});

/** One number from the test database. */
const scalar = (sql: string, args: (string | number)[] = []) => scalarOf(target.db, sql, args);

/** Each POST that honours Idempotency-Key through the middleware. */
const ENDPOINTS = keyedPosts(
  () => target.db,
  () => categoryId,
);

/** POST /store/orders as one more endpoint: its body, and how many orders of the test's pet exist. */
const ORDERS = {
  path: "/store/orders",
  body: () => ({ petId, quantity: 1 }),
  replayStatus: 201,
  count: () => scalar("SELECT count(*) FROM orders WHERE pet_id = ?", [petId]),
};

describe("two requests with one key race: exactly one creates, the other replays it or is refused", () => {
  for (const endpoint of [...ENDPOINTS, ORDERS]) {
    it(`POST ${endpoint.path} twice, the first held before its batch: the second creates, the first replays it`, async () => {
      const headers = { "Idempotency-Key": unique("race") };
      const body = endpoint.body();
      const before = await endpoint.count(body);
      const held = hold(endpoint.path, headers["Idempotency-Key"]);
      const first = call("POST", endpoint.path, staff, body, headers);
      await held.entered;
      const second = await call("POST", endpoint.path, staff, body, headers);
      expect([second.status, second.headers.get("idempotent-replayed")], JSON.stringify(second.body)).toEqual([201, null]);
      held.release();
      const replay = await first;
      expect([replay.status, replay.headers.get("idempotent-replayed")], JSON.stringify(replay.body)).toEqual([endpoint.replayStatus, "true"]);
      expect(replay.body.id).toBe(second.body.id);
      expect(await endpoint.count(body)).toBe(before + 1);
    });
  }

  for (const endpoint of ENDPOINTS) {
    for (const [a, b] of [
      [endpoint, ORDERS],
      [ORDERS, endpoint],
    ] as const) {
      it(`POST ${a.path} held, POST ${b.path} with its key: the second creates, the first is 422 and creates nothing`, async () => {
        const headers = { "Idempotency-Key": unique("cross") };
        const [bodyA, bodyB] = [a.body(), b.body()];
        const [beforeA, beforeB] = [await a.count(bodyA), await b.count(bodyB)];
        const stock = await scalar("SELECT quantity FROM inventory WHERE pet_id = ?", [petId]);
        const held = hold(a.path, headers["Idempotency-Key"]);
        const first = call("POST", a.path, staff, bodyA, headers);
        await held.entered;
        const second = await call("POST", b.path, staff, bodyB, headers);
        expect(second.status, JSON.stringify(second.body)).toBe(201);
        held.release();
        const refused = await first;
        expect([refused.status, refused.body.code]).toEqual([422, "idempotency_key_reused"]);
        expect([await a.count(bodyA), await b.count(bodyB)]).toEqual([beforeA, beforeB + 1]);
        expect(await scalar("SELECT quantity FROM inventory WHERE pet_id = ?", [petId])).toBe(stock - (b === ORDERS ? 1 : 0));
        const again = await call("POST", b.path, staff, bodyB, headers);
        expect([again.headers.get("idempotent-replayed"), again.body.id]).toEqual(["true", second.body.id]);
      });
    }
  }
});
