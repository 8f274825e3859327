/**
 * The Worker's rate limiter (src/runtime/workers/rate-limiter.ts) with fake
 * Workers Rate Limiting bindings: a binding is a counter shared by every
 * isolate of a location, so "two isolates" are two limiters (or two apps)
 * sharing one fake binding. Also checks that wrangler.toml declares the
 * bindings the Worker looks for, with the documented limits.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { parseConfig } from "../../src/config";
import { RATE_LIMIT_BINDING_NAMES, WorkersRateLimiter, type RateLimitBinding } from "../../src/runtime/workers/rate-limiter";
import { nodeTarget, TEST_ENV, type NodeTarget } from "../support/node-target";
import { signupBindingLimitPerMinute } from "../support/worker-target";

/** A fake binding: `limit` requests per key per fixed `periodSeconds` window of a hand-moved clock. */
class FakeBinding implements RateLimitBinding {
  readonly calls: string[] = [];
  private readonly counts = new Map<string, number>();
  failing = false;
  constructor(
    private readonly limitPerPeriod: number,
    private readonly clock: () => Date,
    private readonly periodSeconds = 60,
  ) {}
  async limit({ key }: { key: string }): Promise<{ success: boolean }> {
    this.calls.push(key);
    if (this.failing) throw new Error("binding unavailable");
    const window = Math.floor(this.clock().getTime() / (this.periodSeconds * 1000));
    const id = `${window}|${key}`;
    const count = (this.counts.get(id) ?? 0) + 1;
    this.counts.set(id, count);
    return { success: count <= this.limitPerPeriod };
  }
}

let nowMs = new Date("2026-11-22T10:00:15Z").getTime();
const clock = () => new Date(nowMs);

/** One request against one budget of `limiter`, now. */
function consumeOne(limiter: WorkersRateLimiter, bucket: string, limit: number, windowSeconds: number) {
  return limiter.consume([{ bucket, limit, windowSeconds }], clock());
}

describe("WorkersRateLimiter", () => {
  it("without bindings it is the per-isolate rolling count", async () => {
    const limiter = new WorkersRateLimiter({});
    const decisions = [];
    for (let i = 0; i < 3; i++) decisions.push(await consumeOne(limiter, "ip:192.0.2.1", 2, 60));
    expect(decisions).toEqual([
      { allowed: true, limit: 2, remaining: 1, resetSeconds: 60 },
      { allowed: true, limit: 2, remaining: 0, resetSeconds: 60 },
      { allowed: false, limit: 2, remaining: 0, resetSeconds: 60 },
    ]);
    // The minute on the clock turns (10:01:00): still refused until the first request is a minute old.
    nowMs += 45_000;
    expect(await consumeOne(limiter, "ip:192.0.2.1", 2, 60)).toEqual({ allowed: false, limit: 2, remaining: 0, resetSeconds: 15 });
    nowMs += 15_000;
    expect(await consumeOne(limiter, "ip:192.0.2.1", 2, 60)).toEqual({ allowed: true, limit: 2, remaining: 1, resetSeconds: 60 });
    nowMs -= 60_000;
  });

  it("routes buckets to the binding of their prefix, keyed by the whole bucket", async () => {
    const ip = new FakeBinding(100, clock);
    const key = new FakeBinding(100, clock);
    const signup = new FakeBinding(100, clock);
    const limiter = new WorkersRateLimiter({ ip, key, signup });
    await consumeOne(limiter, "ip:192.0.2.1", 10, 60);
    await limiter.consume(
      [
        { bucket: "key:42", limit: 10, windowSeconds: 60 },
        { bucket: "account:7", limit: 10, windowSeconds: 60 },
      ],
      clock(),
    );
    await consumeOne(limiter, "signup:192.0.2.1", 10, 3600);
    await consumeOne(limiter, "other:x", 10, 60);
    // An account's budget is counted by the per-key binding (same per-minute limit).
    expect([ip.calls, key.calls, signup.calls]).toEqual([["ip:192.0.2.1"], ["key:42", "account:7"], ["signup:192.0.2.1"]]);
  });

  it("refuses when the binding refuses although this isolate has budget left (another isolate spent it)", async () => {
    const shared = new FakeBinding(3, clock);
    const isolateA = new WorkersRateLimiter({ ip: shared });
    const isolateB = new WorkersRateLimiter({ ip: shared });
    for (let i = 0; i < 3; i++) expect((await consumeOne(isolateA, "ip:198.51.100.1", 3, 60)).allowed).toBe(true);
    const refused = await consumeOne(isolateB, "ip:198.51.100.1", 3, 60);
    expect(refused).toEqual({ allowed: false, limit: 3, remaining: 0, resetSeconds: 60 });
    // The binding's window turns: both isolates may go on.
    nowMs += 45_000;
    expect((await consumeOne(isolateB, "ip:198.51.100.1", 3, 60)).allowed).toBe(true);
    nowMs -= 45_000;
  });

  it("does not call the binding once this isolate's own count refuses", async () => {
    const binding = new FakeBinding(100, clock);
    const limiter = new WorkersRateLimiter({ key: binding });
    await consumeOne(limiter, "key:7", 1, 60);
    const refused = await consumeOne(limiter, "key:7", 1, 60);
    expect(refused.allowed).toBe(false);
    expect(binding.calls).toEqual(["key:7"]);
  });

  it("falls back to the per-isolate count when the binding fails, and reports the failure", async () => {
    const binding = new FakeBinding(1, clock);
    binding.failing = true;
    const errors: unknown[] = [];
    const limiter = new WorkersRateLimiter({ ip: binding }, (error) => errors.push(error));
    expect(await consumeOne(limiter, "ip:203.0.113.1", 2, 60)).toEqual({ allowed: true, limit: 2, remaining: 1, resetSeconds: 60 });
    expect(errors).toHaveLength(1);
  });

  it("sign-ups: a per-minute binding of ceil(hourly/60) across isolates, the exact hourly window per isolate", async () => {
    expect([1, 10, 60, 61, 600].map(signupBindingLimitPerMinute)).toEqual([1, 1, 1, 2, 10]);
    const perMinute = new FakeBinding(signupBindingLimitPerMinute(2), clock);
    const isolateA = new WorkersRateLimiter({ signup: perMinute });
    const isolateB = new WorkersRateLimiter({ signup: perMinute });
    const start = nowMs;
    nowMs = new Date("2026-11-22T10:00:00Z").getTime();
    try {
      expect((await consumeOne(isolateA, "signup:192.0.2.7", 2, 3600)).allowed).toBe(true);
      // Same minute, another isolate: the binding stops the burst — and says to retry within its period, not the hour.
      nowMs += 2_000;
      const refused = await consumeOne(isolateB, "signup:192.0.2.7", 2, 3600);
      expect(refused).toEqual({ allowed: false, limit: 2, remaining: 0, resetSeconds: 60 });
      nowMs += refused.resetSeconds * 1000;
      expect((await consumeOne(isolateB, "signup:192.0.2.7", 2, 3600)).allowed).toBe(true);
      nowMs += 58_000;
      const second = await consumeOne(isolateA, "signup:192.0.2.7", 2, 3600);
      expect(second).toEqual({ allowed: true, limit: 2, remaining: 0, resetSeconds: 3480 });
      nowMs += 60_000;
      // The hourly budget of this isolate is spent, whatever the binding says.
      expect(await consumeOne(isolateA, "signup:192.0.2.7", 2, 3600)).toEqual({ allowed: false, limit: 2, remaining: 0, resetSeconds: 3420 });
    } finally {
      nowMs = start;
    }
  });

  it("fromEnv takes the bindings named in wrangler.toml and ignores anything else", async () => {
    const ip = new FakeBinding(100, clock);
    const limiter = WorkersRateLimiter.fromEnv({ [RATE_LIMIT_BINDING_NAMES.ip]: ip, [RATE_LIMIT_BINDING_NAMES.key]: "not a binding", DATABASE_URL: "x" });
    await consumeOne(limiter, "ip:192.0.2.1", 5, 60);
    await consumeOne(limiter, "key:1", 5, 60);
    expect(ip.calls).toEqual(["ip:192.0.2.1"]);
  });
});

describe("the app on the Worker's rate limiter (two isolates, one location)", () => {
  let target: NodeTarget | undefined;
  afterEach(async () => {
    await target?.close();
    target = undefined;
  });

  it("answers 429 with the headers when the binding is spent by the other isolate", async () => {
    const ip = new FakeBinding(2, clock);
    const bindings = { ip, key: new FakeBinding(1000, clock), signup: new FakeBinding(1000, clock) };
    const env = { ...TEST_ENV, RATE_LIMIT_ANON_PER_MIN: "2" };
    const clientIp = (c: { req: { header(name: string): string | undefined } }) => c.req.header("cf-connecting-ip");
    target = await nodeTarget(env, { clock, clientIp, rateLimiter: new WorkersRateLimiter(bindings) });
    const other = createApp({ db: target.db, config: parseConfig(env), clock, clientIp, rateLimiter: new WorkersRateLimiter(bindings), log: () => {} });
    const headers = { "CF-Connecting-IP": "192.0.2.77" };

    const first = await target.fetch("/pets", { headers });
    expect(first.status).toBe(200);
    expect([first.headers.get("ratelimit-limit"), first.headers.get("ratelimit-remaining"), first.headers.get("ratelimit-reset")]).toEqual(["2", "1", "60"]);
    const second = await other.request("http://localhost/pets", { headers });
    expect(second.status).toBe(200);
    // Isolate A still counts 1 of 2 itself, but the location's budget is spent.
    const third = await target.fetch("/pets", { headers });
    expect(third.status).toBe(429);
    expect(((await third.json()) as { code: string }).code).toBe("rate_limited");
    expect([third.headers.get("ratelimit-remaining"), third.headers.get("retry-after")]).toEqual(["0", "60"]);
  });
});

describe("wrangler.toml", () => {
  const toml = readFileSync(resolve(import.meta.dirname, "../../wrangler.toml"), "utf8");
  const entries = [
    ...toml.matchAll(/^\[\[(env\.(\w+)\.)?ratelimits\]\]\s*\nname = "(\w+)"\s*\nnamespace_id = "(\d+)"\s*\nsimple = \{ limit = (\d+), period = (\d+) \}/gm),
  ].map((m) => ({ env: m[2] ?? "top", name: m[3]!, namespace: m[4]!, limit: Number(m[5]), period: Number(m[6]) }));

  it("declares the three bindings the Worker looks for, with the default limits, at top level and in every environment", () => {
    const defaults = parseConfig({}).rateLimits;
    const expected = {
      [RATE_LIMIT_BINDING_NAMES.ip]: defaults.anonPerMinute,
      [RATE_LIMIT_BINDING_NAMES.key]: defaults.keyPerMinute,
      [RATE_LIMIT_BINDING_NAMES.signup]: signupBindingLimitPerMinute(defaults.signupsPerHour),
    };
    const environments = ["top", ...[...toml.matchAll(/^\[env\.(\w+)\]/gm)].map((m) => m[1]!)];
    for (const env of environments) {
      const mine = entries.filter((e) => e.env === env);
      expect(Object.fromEntries(mine.map((e) => [e.name, e.limit])), env).toEqual(expected);
      for (const e of mine) expect(e.period).toBe(60);
    }
    const namespaces = entries.map((e) => e.namespace);
    expect(new Set(namespaces).size, "environments never share a counter").toBe(namespaces.length);
  });
});
