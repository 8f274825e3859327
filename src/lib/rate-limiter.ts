/**
 * Rate limiter interface and its in-memory fixed-window implementation (Node,
 * tests). The Worker binds the same interface to the Workers Rate Limiting
 * binding (src/runtime/workers-rate-limiter.ts).
 */

/** Outcome of counting one request against a bucket. */
export interface RateLimitDecision {
  allowed: boolean;
  /** Requests allowed per window. */
  limit: number;
  /** Requests left in the current window (0 when refused). */
  remaining: number;
  /** Seconds until the window resets (≥ 1). */
  resetSeconds: number;
}

export interface RateLimiter {
  /** Count one request in `bucket`: at most `limit` per `windowSeconds`. */
  consume(bucket: string, limit: number, windowSeconds: number, now: Date): Promise<RateLimitDecision>;
}

/**
 * Fixed windows aligned to multiples of the window length, counted in memory.
 * The clock is the caller's `now`, so tests move time without sleeping.
 */
export class MemoryRateLimiter implements RateLimiter {
  private readonly windows = new Map<string, { start: number; count: number }>();
  private sweptAt = 0;

  async consume(bucket: string, limit: number, windowSeconds: number, now: Date): Promise<RateLimitDecision> {
    const windowMs = windowSeconds * 1000;
    const nowMs = now.getTime();
    const start = Math.floor(nowMs / windowMs) * windowMs;
    this.sweep(nowMs);
    const key = `${windowSeconds}:${bucket}`;
    let window = this.windows.get(key);
    if (!window || window.start !== start) {
      window = { start, count: 0 };
      this.windows.set(key, window);
    }
    const resetSeconds = Math.max(1, Math.ceil((start + windowMs - nowMs) / 1000));
    if (window.count >= limit) return { allowed: false, limit, remaining: 0, resetSeconds };
    window.count += 1;
    return { allowed: true, limit, remaining: limit - window.count, resetSeconds };
  }

  /** Drop finished windows at most once a minute, so memory stays bounded by active clients. */
  private sweep(nowMs: number): void {
    if (nowMs - this.sweptAt < 60_000) return;
    this.sweptAt = nowMs;
    for (const [key, window] of this.windows) {
      const windowMs = Number(key.slice(0, key.indexOf(":"))) * 1000;
      if (window.start + windowMs <= nowMs) this.windows.delete(key);
    }
  }
}
