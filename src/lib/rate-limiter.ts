/**
 * Rate limiter interface and its in-memory sliding-log implementation (Node,
 * tests, and the per-isolate count of the Worker, src/runtime/workers-rate-limiter.ts).
 *
 * Rule (API.md §5): each limit holds in any rolling window of its length, not
 * in windows aligned to the clock: a request is allowed when fewer than
 * `limit` requests of its bucket were allowed in the `windowSeconds` before it.
 */

/** Outcome of counting one request against its buckets. */
export interface RateLimitDecision {
  allowed: boolean;
  /** Requests allowed per window (of the bucket the decision reports). */
  limit: number;
  /** Requests left in the rolling window now (0 when refused). */
  remaining: number;
  /** Seconds (≥ 1) until the oldest counted request leaves the window, freeing one request; when refused, the Retry-After. */
  resetSeconds: number;
}

/** One budget a request spends from: at most `limit` requests of `bucket` in any `windowSeconds`. */
export interface BucketLimit {
  bucket: string;
  limit: number;
  windowSeconds: number;
}

export interface RateLimiter {
  /**
   * Count one request against every budget of `limits`, all or none: it is
   * allowed (and counted in each) only when each has room. Reports the
   * budget with the fewest requests left; when refused, the refusing budget
   * that frees last.
   */
  consume(limits: readonly BucketLimit[], now: Date): Promise<RateLimitDecision>;
}

/** Times (epoch ms, ascending) of the requests a bucket allowed within its window; `head` is the first still counted. */
interface Log {
  times: number[];
  head: number;
  windowMs: number;
}

/**
 * Exact sliding logs in memory: per bucket, the times of the requests it
 * allowed in the last window (so at most `limit` entries each). The clock is
 * the caller's `now`, so tests move time without sleeping.
 */
export class MemoryRateLimiter implements RateLimiter {
  private readonly logs = new Map<string, Log>();
  private sweptAt = 0;

  async consume(limits: readonly BucketLimit[], now: Date): Promise<RateLimitDecision> {
    const nowMs = now.getTime();
    this.sweep(nowMs);
    const looked = limits.map((l) => ({ ...l, log: this.log(l, nowMs) }));
    let report: RateLimitDecision | undefined;
    for (const { limit, log } of looked) {
      const count = log.times.length - log.head;
      if (count < limit) continue;
      // Refused: one more fits once the (count - limit + 1)-th oldest request leaves the window.
      const frees = log.times[log.head + count - limit]! + log.windowMs;
      const decision = { allowed: false, limit, remaining: 0, resetSeconds: secondsUntil(frees, nowMs) };
      if (!report || decision.resetSeconds > report.resetSeconds) report = decision;
    }
    if (report) return report;
    for (const { limit, log } of looked) {
      log.times.push(nowMs);
      const remaining = limit - (log.times.length - log.head);
      const decision = { allowed: true, limit, remaining, resetSeconds: secondsUntil(log.times[log.head]! + log.windowMs, nowMs) };
      if (!report || decision.remaining < report.remaining) report = decision;
    }
    return report ?? { allowed: true, limit: 0, remaining: 0, resetSeconds: 1 };
  }

  /** The log of `bucket` with the requests older than its window dropped. */
  private log({ bucket, windowSeconds }: BucketLimit, nowMs: number): Log {
    const key = `${windowSeconds}:${bucket}`;
    let log = this.logs.get(key);
    if (!log) {
      log = { times: [], head: 0, windowMs: windowSeconds * 1000 };
      this.logs.set(key, log);
    }
    const since = nowMs - log.windowMs;
    while (log.head < log.times.length && log.times[log.head]! <= since) log.head++;
    if (log.head > 32 && log.head * 2 > log.times.length) {
      log.times = log.times.slice(log.head);
      log.head = 0;
    }
    return log;
  }

  /** Drop logs with nothing left in their window at most once a minute, so memory stays bounded by active clients. */
  private sweep(nowMs: number): void {
    if (nowMs - this.sweptAt < 60_000) return;
    this.sweptAt = nowMs;
    for (const [key, log] of this.logs) {
      const newest = log.times[log.times.length - 1];
      if (newest === undefined || newest <= nowMs - log.windowMs) this.logs.delete(key);
    }
  }
}

/** Whole seconds from `nowMs` until `atMs`, at least 1. */
function secondsUntil(atMs: number, nowMs: number): number {
  return Math.max(1, Math.ceil((atMs - nowMs) / 1000));
}
