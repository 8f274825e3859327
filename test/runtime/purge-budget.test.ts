/**
 * The edge purge budget (src/runtime/workers/purge-budget.ts, docs/caching.md) on a
 * simulated clock: a local stand-in of Cloudflare's purge API enforces the
 * documented Free-tier token bucket (5 calls per minute, bucket of 25, ≤ 100
 * tags per call; https://developers.cloudflare.com/cache/how-to/purge-cache/)
 * and refuses beyond it. Ten writes per second for ten minutes (orders and
 * inventory changes, with pet and category changes among them) go through the
 * scheduler the Durable Object runs, with its alarm; the same traffic through
 * the old strategy (one purge call per write) is refused by the stand-in.
 */
import { describe, expect, it } from "vitest";
import type { CommittedEvent } from "../../src/db/client";
import { edgePurgeTags, isShortLivedAtEdge, tagsToPurge } from "../../src/http/cache-tags";
import { DEFAULT_PURGE_POLICY, initialPurgeState, type PurgeBudget, type PurgeOutcome, PurgeScheduler } from "../../src/runtime/workers/purge-budget";
import { EDGE_CACHE_CONTROL, EDGE_SHORT_CACHE_CONTROL } from "../../src/runtime/workers/cache";
import { FREE_TIER_PURGE_LIMITS, STALENESS_BOUNDS_MS } from "../support/purge-limits";

interface Call {
  at: number;
  tags: string[];
  accepted: boolean;
}

/** The purge API's rate limiting: a token bucket per account, refusing calls beyond it or over `maxTags`. */
class PurgeApiStandIn {
  readonly calls: Call[] = [];
  private tokens: number;
  private refilledAt = 0;

  constructor(private readonly limits: PurgeBudget = FREE_TIER_PURGE_LIMITS) {
    this.tokens = limits.burst;
  }

  purge(tags: string[], at: number): PurgeOutcome {
    this.tokens = Math.min(this.limits.burst, this.tokens + ((at - this.refilledAt) * this.limits.perMinute) / 60_000);
    this.refilledAt = at;
    const accepted = tags.length <= this.limits.maxTags && this.tokens >= 1;
    if (accepted) this.tokens -= 1;
    this.calls.push({ at, tags, accepted });
    return accepted ? "accepted" : "refused";
  }

  /** Spend every token, as another Worker of the account would. */
  drain(at: number): void {
    this.purge([], at);
    this.tokens = 0;
  }
}

interface Write {
  at: number;
  source: string;
  changes: CommittedEvent[];
}

/** Deterministic traffic: `perSecond` writes for `minutes`; 90% orders/inventory (1 in 20 moves a pet's status), 10% pets and categories. */
function traffic(perSecond: number, minutes: number): Write[] {
  let seed = 42;
  const random = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const pick = (n: number) => 1 + Math.floor(random() * n);
  const writes: Write[] = [];
  for (let i = 0; i < perSecond * minutes * 60; i += 1) {
    const at = Math.round((i * 1000) / perSecond);
    const roll = random();
    const petId = pick(500);
    let changes: CommittedEvent[];
    if (roll < 0.9) {
      changes = [{ type: "inventory.updated", data: { petId } }];
      if (random() < 0.05) changes.push({ type: "pet.updated", data: { id: petId } });
    } else if (roll < 0.96) {
      changes = [{ type: random() < 0.5 ? "pet.updated" : "pet.created", data: { id: petId } }];
    } else {
      changes = [{ type: random() < 0.5 ? "category.updated" : "category.created", data: { id: pick(40) } }];
    }
    writes.push({ at, source: `req-${i}`, changes });
  }
  return writes;
}

/** The strategy before the budget: every write purges all its tags in its own call. */
function purgePerWrite(writes: Write[], api: PurgeApiStandIn): void {
  for (const write of writes) {
    const tags = tagsToPurge(write.changes);
    if (tags.length > 0) api.purge(tags, write.at);
  }
}

/** The budget: writes submit and purge what they are granted; the alarm sends the rest when `nextWakeAt` says. */
function purgeWithBudget(writes: Write[], api: PurgeApiStandIn, drainUntil: number, observe?: (scheduler: PurgeScheduler) => void): PurgeScheduler {
  const scheduler = new PurgeScheduler(initialPurgeState(DEFAULT_PURGE_POLICY, 0));
  const send = (now: number) => {
    const batch = scheduler.take(now);
    if (!batch) return false;
    scheduler.settle(batch.id, api.purge(batch.tags, now), now);
    return true;
  };
  let clock = 0;
  // The Durable Object's alarm: fires at `nextWakeAt` and sends the due batch.
  const alarmsUntil = (until: number) => {
    for (;;) {
      const wake = scheduler.nextWakeAt(clock);
      if (wake === undefined || wake > until) return;
      clock = wake;
      if (!send(clock)) return;
    }
  };
  for (const write of writes) {
    alarmsUntil(write.at);
    clock = write.at;
    scheduler.submit(edgePurgeTags(tagsToPurge(write.changes)), write.source, write.at);
    send(write.at);
    observe?.(scheduler);
  }
  alarmsUntil(drainUntil);
  return scheduler;
}

/** max-age + stale-while-revalidate of a Cache-Control value, ms. */
function lifetimeMs(cacheControl: string): number {
  const seconds = (name: string) => Number(new RegExp(`${name}=(\\d+)`).exec(cacheControl)?.[1] ?? 0);
  return (seconds("max-age") + seconds("stale-while-revalidate")) * 1000;
}

/** max-age + stale-if-error of a Cache-Control value, ms. */
function onErrorMs(cacheControl: string): number {
  const seconds = (name: string) => Number(new RegExp(`${name}=(\\d+)`).exec(cacheControl)?.[1] ?? 0);
  return (seconds("max-age") + seconds("stale-if-error")) * 1000;
}

/** Time from `at` to the first accepted call at or after `from` that names `tag`, ms (Infinity: none). */
function purgedAfter(calls: Call[], tag: string, from: number, at: number): number {
  const call = calls.find((c) => c.accepted && c.at >= from && c.tags.includes(tag));
  return call ? call.at - at : Number.POSITIVE_INFINITY;
}

describe("purge budget under sustained traffic (10 writes/s, 10 simulated minutes)", () => {
  const writes = traffic(10, 10);
  const end = 12 * 60_000;

  it("the old strategy, one purge call per write, is refused by the purge API", () => {
    const api = new PurgeApiStandIn();
    purgePerWrite(writes, api);
    expect(api.calls.length).toBeGreaterThan(5000);
    expect(api.calls.filter((c) => !c.accepted).length).toBeGreaterThan(4000);
  });

  it("the budget: 0 refused calls, ≤ 100 tags each, ≤ 4 calls in any minute after the first", () => {
    const api = new PurgeApiStandIn();
    purgeWithBudget(writes, api, end);
    expect(api.calls.filter((c) => !c.accepted)).toEqual([]);
    expect(Math.max(...api.calls.map((c) => c.tags.length))).toBeLessThanOrEqual(100);
    for (let start = 60_000; start + 60_000 <= end; start += 1_000) {
      const inWindow = api.calls.filter((c) => c.at >= start && c.at < start + 60_000).length;
      expect(inWindow, `calls in [${start}, ${start + 60_000}) ms`).toBeLessThanOrEqual(4);
    }
    expect(api.calls.length).toBeLessThanOrEqual(DEFAULT_PURGE_POLICY.budget.burst + 4 * 12);
  });

  it("every write's catalogue tags are purged within the stated bound, and again after reads in flight; inventory expires within its bound", () => {
    const api = new PurgeApiStandIn();
    purgeWithBudget(writes, api, end);
    const catalogueLifetime = lifetimeMs(EDGE_CACHE_CONTROL);
    const inventoryLifetime = lifetimeMs(EDGE_SHORT_CACHE_CONTROL);
    expect(inventoryLifetime).toBeLessThanOrEqual(STALENESS_BOUNDS_MS.inventory);
    let worst = 0;
    let worstInFlight = 0;
    let catalogueWrites = 0;
    for (const write of writes) {
      const tags = tagsToPurge(write.changes);
      for (const tag of tags) {
        if (isShortLivedAtEdge(tag)) continue;
        const staleness = Math.min(purgedAfter(api.calls, tag, write.at, write.at), catalogueLifetime);
        const inFlight = Math.min(
          purgedAfter(api.calls, tag, write.at + DEFAULT_PURGE_POLICY.repeatAfterMs, write.at),
          catalogueLifetime + DEFAULT_PURGE_POLICY.repeatAfterMs,
        );
        worst = Math.max(worst, staleness);
        worstInFlight = Math.max(worstInFlight, inFlight);
      }
      if (edgePurgeTags(tags).length > 0) catalogueWrites += 1;
    }
    expect(catalogueWrites).toBeGreaterThan(500);
    expect(worst).toBeLessThanOrEqual(STALENESS_BOUNDS_MS.catalogue);
    expect(worstInFlight).toBeLessThanOrEqual(STALENESS_BOUNDS_MS.catalogueReadInFlight);
  });
});

describe("the staleness table's bounds follow from the edge headers", () => {
  it("catalogue: lifetime without a purge is the scheduler's; inventory: its lifetime; both bound stale-if-error", () => {
    expect(lifetimeMs(EDGE_CACHE_CONTROL)).toBe(DEFAULT_PURGE_POLICY.lifetimeMs);
    expect(lifetimeMs(EDGE_CACHE_CONTROL)).toBeLessThanOrEqual(STALENESS_BOUNDS_MS.catalogueWithoutPurge);
    expect(lifetimeMs(EDGE_SHORT_CACHE_CONTROL)).toBeLessThanOrEqual(STALENESS_BOUNDS_MS.inventory);
    expect(onErrorMs(EDGE_CACHE_CONTROL)).toBe(STALENESS_BOUNDS_MS.catalogueOnError);
    expect(onErrorMs(EDGE_SHORT_CACHE_CONTROL)).toBe(STALENESS_BOUNDS_MS.inventoryOnError);
    expect(60_000 / DEFAULT_PURGE_POLICY.budget.perMinute).toBe(STALENESS_BOUNDS_MS.catalogue);
  });
});

describe("purge scheduler", () => {
  const policy = DEFAULT_PURGE_POLICY;

  it("a quiet catalogue write is purged at once, then again after the read window", () => {
    const scheduler = new PurgeScheduler(initialPurgeState(policy, 0));
    scheduler.submit(["pet:1", "pets"], "a", 1_000);
    expect(scheduler.take(1_000)).toMatchObject({ tags: ["pet:1", "pets"], parts: [{ source: "a", tags: ["pet:1", "pets"] }] });
    scheduler.settle(1, "accepted", 1_100);
    expect(scheduler.nextWakeAt(1_100)).toBe(1_000 + policy.repeatAfterMs);
    expect(scheduler.take(1_000 + policy.repeatAfterMs)?.tags).toEqual(["pet:1", "pets"]);
  });

  it("a refused call is retried after the window with no call meanwhile, and nothing is lost", () => {
    const api = new PurgeApiStandIn();
    api.drain(0);
    const scheduler = new PurgeScheduler(initialPurgeState(policy, 0));
    scheduler.submit(["category:3"], "a", 0);
    const batch = scheduler.take(0)!;
    scheduler.settle(batch.id, api.purge(batch.tags, 0), 0);
    expect(api.calls.at(-1)?.accepted).toBe(false);
    scheduler.submit(["category:4"], "b", 5_000);
    expect(scheduler.take(5_000)).toBeUndefined();
    expect(scheduler.nextWakeAt(5_000)).toBe(policy.retryAfterMs);
    const retry = scheduler.take(policy.retryAfterMs)!;
    expect(retry.tags).toEqual(expect.arrayContaining(["category:3", "category:4"]));
    expect(api.purge(retry.tags, policy.retryAfterMs)).toBe("accepted");
  });

  it("a batch never settled (its caller died) is taken again after the settle timeout", () => {
    const scheduler = new PurgeScheduler(initialPurgeState(policy, 0));
    scheduler.submit(["pet:9"], "a", 0);
    expect(scheduler.take(0)?.tags).toEqual(["pet:9"]);
    expect(scheduler.take(1_000)).toBeUndefined();
    expect(scheduler.state.inFlight).toHaveLength(1);
    const again = scheduler.take(policy.settleTimeoutMs);
    expect(again?.tags).toEqual(["pet:9"]);
    expect(again?.parts).toHaveLength(2); // the lost batch and the write's second purge
    expect(scheduler.state.inFlight.map((b) => b.id)).toEqual([again?.id]);
  });

  it("keeps its stored state small and its calls within the budget under a flood of catalogue writes (50/s)", () => {
    const api = new PurgeApiStandIn();
    const floods: Write[] = [];
    for (let i = 0; i < 50 * 120; i += 1) {
      const id = 1 + (i % 3000);
      floods.push({ at: i * 20, source: `req-${i}-${"x".repeat(30)}`, changes: [{ type: "pet.updated", data: { id } }] });
    }
    let largest = 0;
    let writesSeen = 0;
    const scheduler = purgeWithBudget(floods, api, 4 * 60_000, (s) => {
      writesSeen += 1;
      if (writesSeen % 25 === 0) largest = Math.max(largest, JSON.stringify(s.state).length);
    });
    expect(api.calls.filter((c) => !c.accepted)).toEqual([]);
    // A SQLite-backed Durable Object stores up to 2 MB per key and value (https://developers.cloudflare.com/durable-objects/platform/limits/).
    expect(largest).toBeLessThan(256 * 1024);
    expect(scheduler.state.pending).toEqual([]);
    for (let start = 60_000; start + 60_000 <= 4 * 60_000; start += 1_000) {
      expect(api.calls.filter((c) => c.at >= start && c.at < start + 60_000).length).toBeLessThanOrEqual(4);
    }
  });

  it("a purge that cannot be afforded before its entries expire is dropped (they expire on their own)", () => {
    const scheduler = new PurgeScheduler(initialPurgeState({ ...policy, budget: { ...policy.budget, burst: 1, perMinute: 0.5 } }, 0));
    scheduler.submit(["pet:1"], "a", 0);
    scheduler.take(0);
    scheduler.settle(1, "accepted", 0);
    scheduler.submit(["pet:2"], "b", 1_000);
    expect(scheduler.take(1_000)).toBeUndefined();
    expect(scheduler.take(policy.lifetimeMs + policy.repeatAfterMs + 1_001)).toBeUndefined();
    expect(scheduler.state.pending).toEqual([]);
  });
});
