/** Verified API keys, the per-address throttle of unknown-key lookups and the index of existing keys (docs/architecture.md#unknown-api-keys). */
import { LRUCache } from "lru-cache";
import type { Principal } from "../domain/principal";
import { MemoryRateLimiter } from "./rate-limiter";

/** Most keys, and most paused addresses, held (lru-cache: the least recently used go first). */
const MAX_CACHE_ENTRIES = 10_000;

/** Least time between two reads that bring the index of existing keys up to date, ms. */
export const KEY_INDEX_REFRESH_MS = 1_000;
/** Most keys the index holds; past it there is no index, and every key not known bad is looked up. */
const MAX_INDEXED_KEYS = 200_000;
const INDEX_PAGE = 5_000;

/** Reads up to `limit` keys with id > `afterId`, ascending (src/services/key-index.ts). */
export type ReadKeysAfter = (afterId: number, limit: number) => Promise<{ id: number; secretHash: string }[]>;

/** The index entry of a hex SHA-256: its first 64 bits (a collision only costs a lookup). */
const indexEntry = (hash: string) => hash.slice(0, 16);

/** Verified keys by secret hash for `ttlMs` each (unknown ones as null) by the clock `nowMs`; settled values only (docs/internals.md#the-key-cache). */
export class KeyCache {
  /** Owners by secret hash (`owner: null`: known bad); undefined when `ttlMs` is 0. */
  private readonly owners: LRUCache<string, { owner: Principal | null }> | undefined;
  /** Failed key lookups per client address, and addresses whose lookups are paused (each for its own ttl). */
  private readonly failures = new MemoryRateLimiter();
  private readonly paused: LRUCache<string, true>;

  constructor(
    ttlMs: number,
    private readonly nowMs: () => number = Date.now,
  ) {
    // ttlResolution 0: the clock is read at every check (docs/internals.md#the-key-cache).
    const timing = { ttlResolution: 0, perf: { now: nowMs } };
    this.owners = ttlMs > 0 ? new LRUCache({ max: MAX_CACHE_ENTRIES, ttl: ttlMs, ...timing }) : undefined;
    this.paused = new LRUCache({ max: MAX_CACHE_ENTRIES, ...timing });
  }

  /** The cached owner (null = known bad), or undefined when not cached or expired. */
  get(hash: string): Principal | null | undefined {
    return this.owners?.get(hash)?.owner;
  }

  set(hash: string, owner: Principal | null): void {
    this.owners?.set(hash, { owner });
  }

  /** Drop every entry of a revoked key, so it stops working at once in this process. */
  forget(apiKeyId: number): void {
    if (!this.owners) return;
    const revoked = [...this.owners.entries()].filter(([, entry]) => entry.owner?.apiKeyId === apiKeyId);
    for (const [hash] of revoked) this.owners.delete(hash);
  }

  /** Seconds during which unknown keys from `ip` are answered 429 (0: not throttled). */
  lookupPausedFor(ip: string): number {
    return Math.max(0, Math.ceil(this.paused.getRemainingTTL(ip) / 1000));
  }

  /** Count a failed key lookup from `ip`; past `limitPerMinute` in a rolling minute, `ip`'s lookups pause until the oldest is a minute old. */
  async recordFailedLookup(ip: string, limitPerMinute: number): Promise<void> {
    const limits = [{ bucket: `badkey:${ip}`, limit: limitPerMinute, windowSeconds: 60 }];
    const decision = await this.failures.consume(limits, new Date(this.nowMs()));
    if (!decision.allowed) this.paused.set(ip, true, { ttl: decision.resetSeconds * 1000 });
  }

  /** First 64 bits of the hashes of the keys known to exist; undefined once past `MAX_INDEXED_KEYS`. */
  private indexed: Set<string> | undefined = new Set();
  private indexedUpTo = 0;
  private indexReadAt: number | undefined;

  /** Note that the key of `hash` exists (this process created or verified it). */
  rememberKey(hash: string): void {
    this.indexed?.add(indexEntry(hash));
  }

  /** True when the index was read at most `KEY_INDEX_REFRESH_MS` ago. */
  indexFresh(): boolean {
    return this.indexReadAt !== undefined && this.nowMs() - this.indexReadAt < KEY_INDEX_REFRESH_MS;
  }

  /** Bring the index up to date with `read`: the keys created since the last read (one round trip per 5,000 keys). */
  async refreshIndex(read: ReadKeysAfter): Promise<void> {
    this.indexReadAt = this.nowMs();
    while (this.indexed) {
      const rows = await read(this.indexedUpTo, INDEX_PAGE);
      for (const row of rows) {
        this.indexed.add(indexEntry(row.secretHash));
        this.indexedUpTo = Math.max(this.indexedUpTo, row.id);
      }
      if (this.indexed.size > MAX_INDEXED_KEYS) this.indexed = undefined;
      if (rows.length < INDEX_PAGE) return;
    }
  }

  /** Whether the key of `hash` may exist: true when the index holds it or there is none; else asks again after bringing a stale index up to date. */
  async mayExist(hash: string, read: ReadKeysAfter): Promise<boolean> {
    if (!this.indexed || this.indexed.has(indexEntry(hash))) return true;
    if (this.indexFresh()) return false;
    await this.refreshIndex(read);
    return !this.indexed || this.indexed.has(indexEntry(hash));
  }
}
