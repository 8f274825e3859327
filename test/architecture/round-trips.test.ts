/**
 * Database round trips per request in steady state (issue 7): every read 1,
 * POST /store/orders without Idempotency-Key 1 (one conditional batch), a
 * POST with Idempotency-Key 1 (claim, creation and record in one batch), every
 * other write at most 2. Authenticated requests run with the key cache warm.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { parseConfig } from "../../src/config";
import { countRoundTrips, type RoundTripCounter } from "../support/round-trips";
import { inProcessCaller } from "../support/in-process";
import { nodeTarget, TEST_ENV, type NodeTarget } from "../support/node-target";

let target: NodeTarget;
let counter: RoundTripCounter;
let app: ReturnType<typeof createApp>;
let staff: string;
let customer: string;
const ids: Record<string, number> = {};

const call = inProcessCaller(() => app);

/** Round trips of one request, after a warm-up call with the same key (key cache warm). */
async function roundTrips(method: string, path: string, key?: string, body?: unknown, headers?: Record<string, string>) {
  if (key) await call("GET", "/accounts/me", key);
  counter.reset();
  const res = await call(method, path, key, body, headers);
  return { trips: counter.count(), status: res.status };
}

beforeAll(async () => {
  target = await nodeTarget();
  counter = countRoundTrips(target.db);
  app = createApp({ db: counter.db, config: parseConfig(TEST_ENV), log: () => {} });
  staff = target.staffKey;
  customer = (await call("POST", "/accounts", undefined, { name: "Rt", email: "rt@example.com" })).body.apiKey.key;
  ids.category = (await call("POST", "/categories", staff, { name: "Round trips" })).body.id;
  ids.pet = (await call("POST", "/pets", staff, { name: "Counted", categoryId: ids.category })).body.id;
  await call("PUT", `/store/inventory/${ids.pet}`, staff, { quantity: 1000 });
  ids.order = (await call("POST", "/store/orders", customer, { petId: ids.pet, quantity: 1 })).body.id;
});

afterAll(async () => {
  await target.close();
});

describe("round trips per request (steady state, key cache warm)", () => {
  const reads: [string, () => string, "anon" | "customer" | "staff"][] = [
    ["GET /pets", () => "/pets?status=available&limit=20", "anon"],
    ["GET /pets?id=", () => `/pets?id=${ids.pet}`, "anon"],
    ["GET /pets/{petId}", () => `/pets/${ids.pet}`, "anon"],
    ["GET /categories", () => "/categories", "anon"],
    ["GET /categories/{categoryId}", () => `/categories/${ids.category}`, "anon"],
    ["GET /store/inventory", () => "/store/inventory", "anon"],
    ["GET /store/inventory/{petId}", () => `/store/inventory/${ids.pet}`, "anon"],
    ["GET /store/orders (customer)", () => "/store/orders", "customer"],
    ["GET /store/orders (staff)", () => "/store/orders", "staff"],
    ["GET /store/orders/{orderId}", () => `/store/orders/${ids.order}`, "customer"],
    ["GET /accounts/me", () => "/accounts/me", "customer"],
    ["GET /accounts/me/keys", () => "/accounts/me/keys", "customer"],
    ["GET /health", () => "/health", "anon"],
  ];
  for (const [name, path, who] of reads) {
    it(`${name}: 1 round trip`, async () => {
      const key = who === "anon" ? undefined : who === "staff" ? staff : customer;
      const { trips, status } = await roundTrips("GET", path(), key);
      expect(status).toBe(200);
      expect(trips).toBe(1);
    });
  }

  it("POST /store/orders without Idempotency-Key: 1 round trip", async () => {
    const { trips, status } = await roundTrips("POST", "/store/orders", customer, { petId: ids.pet, quantity: 1 });
    expect(status).toBe(201);
    expect(trips).toBe(1);
  });

  it("POST /store/orders with Idempotency-Key: still 1 round trip (first and replay)", async () => {
    const headers = { "Idempotency-Key": "rt-1" };
    expect(await roundTrips("POST", "/store/orders", customer, { petId: ids.pet, quantity: 1 }, headers)).toEqual({ trips: 1, status: 201 });
    expect(await roundTrips("POST", "/store/orders", customer, { petId: ids.pet, quantity: 1 }, headers)).toEqual({ trips: 1, status: 201 });
  });

  it("POST /pets, /categories and /accounts/me/keys with Idempotency-Key: 1 round trip (first and replay)", async () => {
    const posts: [string, string | undefined, unknown, number][] = [
      ["/pets", staff, { name: "Keyed", categoryId: ids.category }, 201],
      ["/categories", staff, { name: `Keyed ${Math.random()}` }, 201],
      ["/accounts/me/keys", customer, { name: "keyed" }, 200],
    ];
    for (const [path, key, body, replayStatus] of posts) {
      const headers = { "Idempotency-Key": `rt-${path}` };
      expect(await roundTrips("POST", path, key, body, headers)).toEqual({ trips: 1, status: 201 });
      expect(await roundTrips("POST", path, key, body, headers)).toEqual({ trips: 1, status: replayStatus });
    }
  });

  it("a refused order (409) costs 1 round trip too", async () => {
    const { trips, status } = await roundTrips("POST", "/store/orders", customer, { petId: ids.pet, quantity: 1000 });
    expect(status).toBe(409);
    expect(trips).toBe(1);
  });

  const writes: [string, string, () => string, () => unknown, number][] = [
    ["POST /categories", "POST", () => "/categories", () => ({ name: `Cat ${Math.random()}` }), 201],
    ["PATCH /categories/{categoryId}", "PATCH", () => `/categories/${ids.category}`, () => ({ description: "d" }), 200],
    ["POST /pets", "POST", () => "/pets", () => ({ name: "New", categoryId: ids.category }), 201],
    ["PUT /pets/{petId}", "PUT", () => `/pets/${ids.pet}`, () => ({ name: "Counted", categoryId: ids.category }), 200],
    ["PATCH /pets/{petId}", "PATCH", () => `/pets/${ids.pet}`, () => ({ name: "Counted again" }), 200],
    ["PUT /store/inventory/{petId}", "PUT", () => `/store/inventory/${ids.pet}`, () => ({ quantity: 1000 }), 200],
    ["PATCH /store/orders/{orderId}", "PATCH", () => `/store/orders/${ids.order}`, () => ({ shipDate: "2026-12-24T10:00:00Z" }), 200],
    ["POST /accounts/me/keys", "POST", () => "/accounts/me/keys", () => ({ name: "another" }), 201],
  ];
  for (const [name, method, path, body, expected] of writes) {
    it(`${name}: at most 2 round trips`, async () => {
      const key = name.startsWith("POST /accounts") ? customer : staff;
      const { trips, status } = await roundTrips(method, path(), key, body());
      expect(status).toBe(expected);
      expect(trips).toBeLessThanOrEqual(2);
    });
  }

  it("DELETE /store/orders/{orderId} and DELETE /pets/{petId}: at most 2 round trips", async () => {
    const order = (await call("POST", "/store/orders", customer, { petId: ids.pet, quantity: 1 })).body.id;
    expect(await roundTrips("DELETE", `/store/orders/${order}`, customer)).toEqual({ trips: 1, status: 204 });
    const pet = (await call("POST", "/pets", staff, { name: "Doomed", categoryId: ids.category })).body.id;
    const res = await roundTrips("DELETE", `/pets/${pet}`, staff);
    expect(res.status).toBe(204);
    expect(res.trips).toBeLessThanOrEqual(2);
  });

  it("POST /accounts (sign-up): 1 round trip", async () => {
    const { trips, status } = await roundTrips("POST", "/accounts", undefined, { name: "Sign", email: `s${Date.now()}@example.com` });
    expect(status).toBe(201);
    expect(trips).toBe(1);
  });
});
