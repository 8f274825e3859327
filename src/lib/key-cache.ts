/**
 * The in-memory cache of verified API keys and the per-address throttle of
 * unknown-key lookups (API.md §4, §5), kept by the app between requests and
 * used by the authentication middleware (src/middleware/auth.ts).
 */
import type { Principal } from "../domain/principal";
import { MemoryRateLimiter } from "./rate-limiter";

const MAX_CACHE_ENTRIES = 10_000;

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
}
