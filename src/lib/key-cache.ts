/**
 * The in-memory cache of verified API keys, the per-address throttle of
 * unknown-key lookups and the index of existing keys (docs/api.md), kept by
 * the app between requests and used by the authentication middleware
 * (src/middleware/auth.ts; docs/architecture.md "Unknown API keys").
 */
import type { Principal } from "../domain/principal";
import { MemoryRateLimiter } from "./rate-limiter";

const MAX_CACHE_ENTRIES = 10_000;

/** Least time between two reads that bring the index of existing keys up to date, ms. */
export const KEY_INDEX_REFRESH_MS = 1_000;
/** Most keys the index holds; past it there is no index, and every key not known bad is looked up. */
const MAX_INDEXED_KEYS = 200_000;
/** Keys per read while the index is brought up to date. */
const INDEX_PAGE = 5_000;

/** Reads up to `limit` keys with id > `afterId`, ascending (src/services/key-index.ts). */
export type ReadKeysAfter = (afterId: number, limit: number) => Promise<{ id: number; secretHash: string }[]>;

/** The index entry of a hex SHA-256: its first 64 bits (a collision only costs a lookup). */
const indexEntry = (hash: string) => hash.slice(0, 16);

/**
 * Verified keys by secret hash, each for at most `ttlMs`; unknown keys are
 * cached as null, so a repeated bad key costs no round trip. Holds settled
 * values only, never a pending lookup: on Workers a promise of one request must
 * not be awaited by another (docs/architecture.md, "Workers: what may outlive
 * a request"), so concurrent first requests with one key each look it up.
 */
export class KeyCache {
  private readonly entries = new Map<string, { owner: Principal | null; expiresAt: number }>();

  constructor(private readonly ttlMs: number) {}

  /** The cached owner (null = known bad), or undefined when not cached or expired. */
  get(hash: string, nowMs: number): Principal | null | undefined {
    const entry = this.entries.get(hash);
    if (!entry) return undefined;
    if (entry.expiresAt <= nowMs) {
      this.entries.delete(hash);
      return undefined;
    }
    return entry.owner;
  }

  set(hash: string, owner: Principal | null, nowMs: number): void {
    if (this.ttlMs <= 0) return;
    if (this.entries.size >= MAX_CACHE_ENTRIES) this.entries.clear();
    this.entries.set(hash, { owner, expiresAt: nowMs + this.ttlMs });
  }

  /** Drop every entry of a revoked key, so it stops working at once in this process. */
  forget(apiKeyId: number): void {
    for (const [hash, entry] of this.entries) if (entry.owner?.apiKeyId === apiKeyId) this.entries.delete(hash);
  }

  /** Failed key lookups per client address, and addresses whose lookups are paused (until, epoch ms). */
  private readonly failures = new MemoryRateLimiter();
  private readonly paused = new Map<string, number>();

  /** Seconds during which unknown keys from `ip` are answered 429 (0: not throttled). */
  lookupPausedFor(ip: string, nowMs: number): number {
    const until = this.paused.get(ip);
    if (until === undefined) return 0;
    if (until <= nowMs) {
      this.paused.delete(ip);
      return 0;
    }
    return Math.ceil((until - nowMs) / 1000);
  }

  /**
   * Count a lookup of an unknown or revoked key from `ip`; past `limitPerMinute`
   * such lookups in a rolling minute, that address's unknown keys are answered 429
   * until the oldest of them is a minute old (`lookupPausedFor`).
   */
  async recordFailedLookup(ip: string, limitPerMinute: number, now: Date): Promise<void> {
    const decision = await this.failures.consume([{ bucket: `badkey:${ip}`, limit: limitPerMinute, windowSeconds: 60 }], now);
    if (decision.allowed) return;
    if (this.paused.size >= MAX_CACHE_ENTRIES) this.paused.clear();
    this.paused.set(ip, now.getTime() + decision.resetSeconds * 1000);
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
  indexFresh(nowMs: number): boolean {
    return this.indexReadAt !== undefined && nowMs - this.indexReadAt < KEY_INDEX_REFRESH_MS;
  }

  /** Bring the index up to date with `read`: the keys created since the last read (one round trip per 5,000 keys). */
  async refreshIndex(nowMs: number, read: ReadKeysAfter): Promise<void> {
    this.indexReadAt = nowMs;
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

  /**
   * Whether the key of `hash` may exist: true when the index holds it (or there
   * is no index); otherwise the index is brought up to date first unless it is
   * fresh (`indexFresh`), so a false answer from a fresh index costs no database read.
   */
  async mayExist(hash: string, nowMs: number, read: ReadKeysAfter): Promise<boolean> {
    if (!this.indexed || this.indexed.has(indexEntry(hash))) return true;
    if (this.indexFresh(nowMs)) return false;
    await this.refreshIndex(nowMs, read);
    return !this.indexed || this.indexed.has(indexEntry(hash));
  }
}
