/**
 * Idempotency-Key races across endpoints (API.md §4: a key belongs to the
 * account, whatever its endpoint): the first request is held inside the app
 * by a gate (no sleeps) while a second request of the same account sends the
 * same key to POST /store/orders and to another POST. The second is 409
 * `concurrent_update`, never removes the first's claim, and the first's
 * response is stored and replayed: exactly one resource exists.
 */
import type { MiddlewareHandler } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AppEnv } from "../../src/lib/context";
import { inProcessCaller } from "../support/in-process";
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
async function scalar(sql: string, args: (string | number)[] = []): Promise<number> {
  const result = await target.db.$client.execute({ sql, args });
  return Number(result.rows[0]![0]);
}

let serial = 0;
const unique = (prefix: string) => `${prefix}-${Date.now()}-${++serial}`;

/** Each POST that honours Idempotency-Key through the middleware: a body, the replay's status, and how many resources it created. */
const ENDPOINTS: { path: string; body: () => Record<string, unknown>; replayStatus: number; count: (body: Record<string, unknown>) => Promise<number> }[] = [
  {
    path: "/pets",
    body: () => ({ name: unique("pet"), categoryId }),
    replayStatus: 201,
    count: (b) => scalar("SELECT count(*) FROM pets WHERE name = ?", [String(b.name)]),
  },
  {
    path: "/categories",
    body: () => ({ name: unique("category") }),
    replayStatus: 201,
    count: (b) => scalar("SELECT count(*) FROM categories WHERE name = ?", [String(b.name)]),
  },
  {
    path: "/accounts/me/keys",
    body: () => ({ name: unique("key") }),
    replayStatus: 200,
    count: (b) => scalar("SELECT count(*) FROM api_keys WHERE name = ?", [String(b.name)]),
  },
  {
    path: "/webhooks",
    body: () => ({ url: `https://example.com/hooks/${unique("hook")}`, events: ["pet.created"] }),
    replayStatus: 200,
    count: (b) => scalar("SELECT count(*) FROM webhooks WHERE url = ?", [String(b.url)]),
  },
];

describe("a key held by an in-flight request of the same account", () => {
  for (const [index, endpoint] of ENDPOINTS.entries()) {
    const other = ENDPOINTS[(index + 1) % ENDPOINTS.length]!;
    it(`POST ${endpoint.path} held: POST /store/orders and POST ${other.path} with its key are 409 concurrent_update; its response is stored and replayed`, async () => {
      const key = unique("race");
      const headers = { "Idempotency-Key": key };
      const body = endpoint.body();
      const held = hold(endpoint.path, key);
      const first = call("POST", endpoint.path, staff, body, headers);
      await held.entered;
      const stockBefore = await scalar("SELECT quantity FROM inventory WHERE pet_id = ?", [petId]);

      const order = await call("POST", "/store/orders", staff, { petId, quantity: 1 }, headers);
      expect([order.status, order.body.code], JSON.stringify(order.body)).toEqual([409, "concurrent_update"]);
      const otherBody = other.body();
      const elsewhere = await call("POST", other.path, staff, otherBody, headers);
      expect([elsewhere.status, elsewhere.body.code], JSON.stringify(elsewhere.body)).toEqual([409, "concurrent_update"]);
      expect(await other.count(otherBody)).toBe(0);
      expect(await scalar("SELECT quantity FROM inventory WHERE pet_id = ?", [petId])).toBe(stockBefore);

      held.release();
      const created = await first;
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const again = await call("POST", endpoint.path, staff, body, headers);
      expect([again.status, again.headers.get("idempotent-replayed")], JSON.stringify(again.body)).toEqual([endpoint.replayStatus, "true"]);
      expect(again.body.id).toBe(created.body.id);
      expect(await endpoint.count(body)).toBe(1);
      // Once the first request is done, the key is its: another endpoint's request is another request.
      const late = await call("POST", "/store/orders", staff, { petId, quantity: 1 }, headers);
      expect([late.status, late.body.code]).toEqual([422, "idempotency_key_reused"]);
      expect(await scalar("SELECT quantity FROM inventory WHERE pet_id = ?", [petId])).toBe(stockBefore);
    });
  }
});
