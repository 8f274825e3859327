/**
 * The key cache (src/http/key-cache.ts) on a clock moved by hand: a verified or
 * unknown key is held for the TTL and no longer, a revoked key is dropped at
 * once, and an address's pause ends when its time is up.
 */
import { describe, expect, it } from "vitest";
import type { Principal } from "../../src/domain/principal";
import { KeyCache } from "../../src/http/key-cache";

const owner = (apiKeyId: number) => ({ apiKeyId }) as Principal;

function setup(ttlMs: number) {
  let ms = new Date("2026-11-22T10:00:00Z").getTime();
  return { cache: new KeyCache(ttlMs, () => ms), advance: (by: number) => (ms += by) };
}

describe("key cache", () => {
  it("holds an owner, or null for an unknown key, for the TTL on the given clock", () => {
    const { cache, advance } = setup(30_000);
    cache.set("a", owner(1));
    cache.set("b", null);
    advance(29_999);
    expect([cache.get("a"), cache.get("b")]).toEqual([owner(1), null]);
    advance(2);
    expect([cache.get("a"), cache.get("b")]).toEqual([undefined, undefined]);
  });

  it("holds nothing when the TTL is 0", () => {
    const { cache } = setup(0);
    cache.set("a", owner(1));
    expect(cache.get("a")).toBeUndefined();
  });

  it("forgets every hash of a revoked key and keeps the others", () => {
    const { cache } = setup(30_000);
    cache.set("a", owner(1));
    cache.set("b", owner(2));
    cache.set("c", owner(1));
    cache.forget(1);
    expect([cache.get("a"), cache.get("b"), cache.get("c")]).toEqual([undefined, owner(2), undefined]);
  });

  it("pauses an address past its limit until the oldest failure is a minute old", async () => {
    const { cache, advance } = setup(30_000);
    for (let i = 0; i < 3; i++) await cache.recordFailedLookup("192.0.2.1", 3);
    expect(cache.lookupPausedFor("192.0.2.1")).toBe(0);
    await cache.recordFailedLookup("192.0.2.1", 3);
    expect([cache.lookupPausedFor("192.0.2.1"), cache.lookupPausedFor("192.0.2.2")]).toEqual([60, 0]);
    advance(59_001);
    expect(cache.lookupPausedFor("192.0.2.1")).toBe(1);
    advance(999);
    expect(cache.lookupPausedFor("192.0.2.1")).toBe(0);
  });
});
