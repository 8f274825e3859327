/**
 * Rate limits (docs/api.md#rate-limits, issue 3) on the Node app with an injected clock and
 * client address (createApp deps `clock`, `clientIp` ← `X-Test-IP`): the
 * N+1th request is 429 `rate_limited` with `RateLimit-Limit/Remaining/Reset`
 * and `Retry-After`; keys are counted separately from each other and from
 * anonymous traffic, and the keys of one account share the account's budget;
 * anonymous traffic per IP; sign-ups per IP per hour; every limit holds in any
 * rolling window, also across the clock's minute or hour (no sleeping). Small limits via env.
 * Unknown keys: test/resources/unknown-keys.test.ts.
 */
import { afterEach, describe, expect, it } from "vitest";
import { MemoryRateLimiter } from "../../src/http/rate-limiter";
import { createOperatorKey } from "../../src/services/accounts.service";
import { connect, type ApiClient, type ApiResponse } from "../support/client";
import { nodeTarget, type NodeTarget } from "../support/node-target";
import { uniqueEmail, type SignUpBody } from "../scenarios/accounts.scenarios";

/** A clock the test moves by hand. */
class ManualClock {
  private ms: number;
  constructor(iso: string) {
    this.ms = new Date(iso).getTime();
  }
  now = (): Date => new Date(this.ms);
  advance(seconds: number): void {
    this.ms += seconds * 1000;
  }
}

let target: NodeTarget | undefined;
afterEach(async () => {
  await target?.close();
  target = undefined;
});

/** A fresh app with the given limits, the clock at `iso`, the client address taken from `X-Test-IP`. */
async function setup(env: Record<string, string>, iso: string): Promise<{ api: ApiClient; clock: ManualClock; t: NodeTarget }> {
  const clock = new ManualClock(iso);
  target = await nodeTarget(env, { clock: clock.now, clientIp: (c) => c.req.header("x-test-ip") });
  return { api: await connect(target), clock, t: target };
}

function from(ip: string, key?: string) {
  return { headers: { "X-Test-IP": ip }, key };
}

/** Assert the RateLimit-* triple (draft-ietf-httpapi-ratelimit-headers). */
function expectBudget(res: ApiResponse, limit: number, remaining: number, reset: number): void {
  const got = ["ratelimit-limit", "ratelimit-remaining", "ratelimit-reset"].map((h) => res.headers.get(h));
  expect(got, `${res.status} ${JSON.stringify(res.body)}`).toEqual([String(limit), String(remaining), String(reset)]);
}

/** Assert a 429 `rate_limited` with the headers of an exhausted budget and `Retry-After` (RFC 9110 §10.2.3). */
function expectLimited(res: ApiResponse, limit: number, retryAfter: number): void {
  expect(res.status, JSON.stringify(res.body)).toBe(429);
  expect(res.body.code).toBe("rate_limited");
  expect(res.headers.get("retry-after")).toBe(String(retryAfter));
  expectBudget(res, limit, 0, retryAfter);
  expect(res.headers.get("x-request-id")).toBeTruthy();
}

describe("anonymous requests: per client IP per minute", () => {
  it("the N+1th request is 429 with RateLimit-* and Retry-After; another IP is unaffected; the limit holds across the clock's minute", async () => {
    const { api, clock } = await setup({ RATE_LIMIT_ANON_PER_MIN: "3" }, "2026-11-22T10:00:05Z");
    for (const remaining of [2, 1, 0]) {
      const res = await api.get("/pets", from("192.0.2.1"));
      expect(res.status).toBe(200);
      expectBudget(res, 3, remaining, 60);
    }
    expectLimited(await api.get("/pets", from("192.0.2.1")), 3, 60);
    // Every route shares the caller's budget, protected ones included (429 before 401).
    expectLimited(await api.get("/categories", from("192.0.2.1")), 3, 60);
    expectLimited(await api.get("/accounts/me", from("192.0.2.1")), 3, 60);
    expectLimited(await api.get("/health", from("192.0.2.1")), 3, 60);

    const other = await api.get("/pets", from("192.0.2.2"));
    expect(other.status).toBe(200);
    expectBudget(other, 3, 2, 60);

    // 10:01:00: the clock's minute turns, the rolling minute of the three requests does not.
    clock.advance(55);
    expectLimited(await api.get("/pets", from("192.0.2.1")), 3, 5);
    clock.advance(4);
    expectLimited(await api.get("/pets", from("192.0.2.1")), 3, 1);
    clock.advance(1);
    const again = await api.get("/pets", from("192.0.2.1"));
    expect(again.status).toBe(200);
    expectBudget(again, 3, 2, 60);
  });

  it("counts refused and failed requests' headers too: errors carry the budget, preflights are not counted", async () => {
    const { api, t } = await setup({ RATE_LIMIT_ANON_PER_MIN: "2" }, "2026-11-22T10:00:30Z");
    const notFound = await api.get("/no-such-route", from("192.0.2.9"));
    expect(notFound.status).toBe(404);
    expectBudget(notFound, 2, 1, 60);
    const preflight = await t.fetch("/pets", {
      method: "OPTIONS",
      headers: { "X-Test-IP": "192.0.2.9", Origin: "https://app.example", "Access-Control-Request-Method": "POST" },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("ratelimit-remaining")).toBeNull();
    const unauthorized = await api.get("/accounts/me", from("192.0.2.9"));
    expect(unauthorized.status).toBe(401);
    expectBudget(unauthorized, 2, 0, 60);
    expectLimited(await api.get("/pets", from("192.0.2.9")), 2, 60);
  });

  it("a bad key is anonymous traffic: counted per IP", async () => {
    const { api } = await setup({ RATE_LIMIT_ANON_PER_MIN: "2", RATE_LIMIT_KEY_PER_MIN: "100" }, "2026-11-22T10:00:00Z");
    const badKey = `psk_${"Z".repeat(43)}`;
    expectBudget(await api.get("/pets", from("198.51.100.7", badKey)), 2, 1, 60);
    expect((await api.get("/accounts/me", from("198.51.100.7", badKey))).status).toBe(401);
    expectLimited(await api.get("/pets", from("198.51.100.7", badKey)), 2, 60);
    expectLimited(await api.get("/pets", from("198.51.100.7")), 2, 60);
  });
});

describe("requests with a key: per key and per account per minute", () => {
  it("keys of other accounts are counted separately, the keys of one account share its budget, apart from the IP's anonymous budget", async () => {
    const { api, clock, t } = await setup({ RATE_LIMIT_ANON_PER_MIN: "2", RATE_LIMIT_KEY_PER_MIN: "3" }, "2026-11-22T10:00:10Z");
    const now = clock.now();
    const first = (await createOperatorKey(t.db, "customer", "rate", now)).apiKey.key;
    const second = (await createOperatorKey(t.db, "customer", "rate", now)).apiKey.key; // same account, another key
    const other = (await createOperatorKey(t.db, "customer", "other", now)).apiKey.key;
    const ip = "203.0.113.5";

    for (const remaining of [2, 1, 0]) {
      const res = await api.get("/accounts/me", from(ip, first));
      expect(res.status).toBe(200);
      expectBudget(res, 3, remaining, 60);
    }
    expectLimited(await api.get("/accounts/me", from(ip, first)), 3, 60);
    // The key's budget follows the key, not the address.
    expectLimited(await api.get("/pets", from("203.0.113.99", first)), 3, 60);
    // Another key of the same account: the account's budget is spent too (docs/api.md#rate-limits: at most that per account).
    expectLimited(await api.get("/accounts/me", from(ip, second)), 3, 60);

    const elsewhere = await api.get("/accounts/me", from(ip, other));
    expect(elsewhere.status).toBe(200);
    expectBudget(elsewhere, 3, 2, 60);
    const anonymous = await api.get("/pets", from(ip));
    expect(anonymous.status).toBe(200);
    expectBudget(anonymous, 2, 1, 60);

    clock.advance(50);
    expectLimited(await api.get("/accounts/me", from(ip, second)), 3, 10);
    clock.advance(10);
    const reset = await api.get("/accounts/me", from(ip, second));
    expect(reset.status).toBe(200);
    expectBudget(reset, 3, 2, 60);
  });

  it("the staff key is limited like any key", async () => {
    const { api, t } = await setup({ RATE_LIMIT_KEY_PER_MIN: "1" }, "2026-11-22T10:00:59Z");
    expect((await api.get("/accounts/me", from("203.0.113.6", t.staffKey))).status).toBe(200);
    expectLimited(await api.get("/accounts/me", from("203.0.113.6", t.staffKey)), 1, 60);
  });
});

describe("sign-ups: per client IP per hour", () => {
  it("the N+1th sign-up from an IP is 429 until the first is an hour old, across the clock's hour; other IPs and other requests are unaffected", async () => {
    const { api, clock } = await setup({ RATE_LIMIT_SIGNUP_PER_HOUR: "2" }, "2026-11-22T10:15:00Z");
    const signUp = (ip: string) => api.post<SignUpBody>("/accounts", { name: "Rate", email: uniqueEmail("rate") }, from(ip));

    for (const remaining of [1, 0]) {
      const res = await signUp("192.0.2.50");
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expectBudget(res, 2, remaining, 3600);
    }
    expectLimited(await signUp("192.0.2.50"), 2, 3600);

    const elsewhere = await signUp("192.0.2.51");
    expect(elsewhere.status).toBe(201);
    expectBudget(elsewhere, 2, 1, 3600);
    // Other requests from the refused address go on (they have their own per-minute budget).
    const read = await api.get("/pets", from("192.0.2.50"));
    expect(read.status).toBe(200);
    expect(read.headers.get("ratelimit-limit")).toBe("100000");

    clock.advance(45 * 60);
    // 11:00:00: the clock's hour turns, the rolling hour of the two sign-ups does not.
    expectLimited(await signUp("192.0.2.50"), 2, 15 * 60);
    clock.advance(15 * 60 - 1);
    expectLimited(await signUp("192.0.2.50"), 2, 1);
    clock.advance(1);
    const next = await signUp("192.0.2.50");
    expect(next.status).toBe(201);
    expectBudget(next, 2, 1, 3600);
  });

  it("a sign-up also spends the per-minute budget of its address", async () => {
    const { api } = await setup({ RATE_LIMIT_ANON_PER_MIN: "1", RATE_LIMIT_SIGNUP_PER_HOUR: "5" }, "2026-11-22T10:00:00Z");
    const first = await api.post("/accounts", { name: "Rate", email: uniqueEmail("rate") }, from("192.0.2.60"));
    expect(first.status).toBe(201);
    expectLimited(await api.post("/accounts", { name: "Rate", email: uniqueEmail("rate") }, from("192.0.2.60")), 1, 60);
  });
});

describe("memory of the in-process limiter", () => {
  it("stays bounded by the window's slots, not by the limit: 100,000 requests under a limit of 10,000,000", async () => {
    const limiter = new MemoryRateLimiter();
    const start = new Date("2026-11-22T10:00:00.500Z").getTime();
    const budget = [{ bucket: "ip:192.0.2.1", limit: 10_000_000, windowSeconds: 60 }];
    let remaining = 0;
    // One request every 2 ms for 200 s: more than three windows.
    for (let i = 0; i < 100_000; i++) {
      const decision = await limiter.consume(budget, new Date(start + i * 2));
      expect(decision.allowed).toBe(true);
      remaining = decision.remaining;
      if (i % 10_000 === 0) expect(limiter.slotCount()).toBeLessThanOrEqual(61);
    }
    expect(limiter.slotCount()).toBeLessThanOrEqual(61);
    // Still the rolling minute: the last 60 s hold 30,000 requests, plus at most one 1 s slot (500) counted early.
    const counted = 10_000_000 - remaining;
    expect(counted).toBeGreaterThanOrEqual(30_000);
    expect(counted).toBeLessThanOrEqual(30_500);
  });
});
