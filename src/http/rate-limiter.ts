/** The rate limiter and its in-memory sliding windows: each limit holds in any rolling window (docs/configuration.md#how-the-limits-count). */

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

/** The per-minute budget one request spends (docs/api.md#rate-limits): its account's (`accountId`), else its client address's. */
export function requestBudget(limits: { anonPerMinute: number; keyPerMinute: number }, accountId: number | undefined, clientIp: string): BucketLimit[] {
  return accountId === undefined
    ? [{ bucket: `ip:${clientIp}`, limit: limits.anonPerMinute, windowSeconds: 60 }]
    : [{ bucket: `account:${accountId}`, limit: limits.keyPerMinute, windowSeconds: 60 }];
}

export interface RateLimiter {
  /** Count one request against every budget of `limits`, all or none; reports the budget with the fewest left or, refused, the refusing one that frees last. */
  consume(limits: readonly BucketLimit[], now: Date): Promise<RateLimitDecision>;
}

/** Sub-windows a window is split into: 1 s slots for a minute, 60 s slots for an hour. */
const SLOTS_PER_WINDOW = 60;
/** Slots a bucket keeps: those that can overlap its window (the oldest one partly). */
const RING = SLOTS_PER_WINDOW + 1;

/** A bucket's ring of `RING` slots: slot `k` (time [k·slotMs, (k+1)·slotMs)) at index `k % RING`; `head..tail` are counted, `total` their sum. */
interface Slots {
  windowMs: number;
  slotMs: number;
  counts: Float64Array;
  lasts: Float64Array;
  head: number;
  tail: number;
  total: number;
}

/** Sliding windows in memory, 60 slots per window, the caller's clock (docs/configuration.md#how-the-limits-count). */
export class MemoryRateLimiter implements RateLimiter {
  private readonly buckets = new Map<string, Slots>();
  private sweptAt = 0;
  /** The slots of the budgets being decided (consume never awaits, so one array serves every call). */
  private readonly looked: Slots[] = [];

  async consume(limits: readonly BucketLimit[], now: Date): Promise<RateLimitDecision> {
    const nowMs = now.getTime();
    this.sweep(nowMs);
    let report: RateLimitDecision | undefined;
    const looked = this.looked;
    looked.length = 0;
    for (const l of limits) {
      const slots = this.slots(l, nowMs);
      looked.push(slots);
      if (slots.total < l.limit) continue;
      const decision = { allowed: false, limit: l.limit, remaining: 0, resetSeconds: secondsUntil(freesAt(slots, slots.total - l.limit + 1), nowMs) };
      if (!report || decision.resetSeconds > report.resetSeconds) report = decision;
    }
    if (report) return report;
    for (let j = 0; j < limits.length; j++) {
      const l = limits[j]!;
      const slots = looked[j]!;
      record(slots, nowMs);
      const decision = { allowed: true, limit: l.limit, remaining: l.limit - slots.total, resetSeconds: secondsUntil(freesAt(slots, 1), nowMs) };
      if (!report || decision.remaining < report.remaining) report = decision;
    }
    looked.length = 0;
    return report ?? { allowed: true, limit: 0, remaining: 0, resetSeconds: 1 };
  }

  /** Slots held across all buckets (each bucket holds a fixed number, whatever its limit); for tests. */
  slotCount(): number {
    return this.buckets.size * RING;
  }

  /** The slots of `bucket` with those wholly older than its window dropped. */
  private slots(limit: BucketLimit, nowMs: number): Slots {
    const id = `${limit.windowSeconds}:${limit.bucket}`;
    let slots = this.buckets.get(id);
    if (!slots) {
      const windowMs = limit.windowSeconds * 1000;
      slots = { windowMs, slotMs: windowMs / SLOTS_PER_WINDOW, counts: new Float64Array(RING), lasts: new Float64Array(RING), head: 0, tail: -1, total: 0 };
      this.buckets.set(id, slots);
    }
    expire(slots, nowMs - slots.windowMs);
    return slots;
  }

  /** Drop buckets with nothing left in their window at most once a minute, so memory stays bounded by active clients. */
  private sweep(nowMs: number): void {
    if (nowMs - this.sweptAt < 60_000) return;
    this.sweptAt = nowMs;
    for (const [id, slots] of this.buckets) {
      expire(slots, nowMs - slots.windowMs);
      if (slots.total === 0) this.buckets.delete(id);
    }
  }
}

/** Drop the oldest slots whose latest request is at or before `sinceMs` (no longer in the window). */
function expire(slots: Slots, sinceMs: number): void {
  const { counts, lasts } = slots;
  while (slots.head <= slots.tail) {
    const i = slots.head % RING;
    if (counts[i]! > 0 && lasts[i]! > sinceMs) return;
    slots.total -= counts[i]!;
    counts[i] = 0;
    slots.head++;
  }
}

/** Count one request at `nowMs` (after `expire`, so the ring has room for its slot). */
function record(slots: Slots, nowMs: number): void {
  const k = Math.floor(nowMs / slots.slotMs);
  // A clock that went back counts in the newest slot: held at least as long.
  const slot = Math.max(k, slots.tail);
  if (slots.head > slots.tail) slots.head = slot;
  slots.tail = slot;
  const i = slot % RING;
  slots.counts[i]! += 1;
  slots.lasts[i] = Math.max(slots.lasts[i]!, nowMs);
  slots.total += 1;
}

/** Epoch ms when the `n` oldest counted requests have all left the window (the newest of their slots' latest times, plus the window). */
function freesAt(slots: Slots, n: number): number {
  let dropped = 0;
  for (let k = slots.head; k <= slots.tail; k++) {
    const i = k % RING;
    dropped += slots.counts[i]!;
    if (dropped >= n) return slots.lasts[i]! + slots.windowMs;
  }
  return slots.lasts[slots.tail % RING]! + slots.windowMs;
}

function secondsUntil(atMs: number, nowMs: number): number {
  return Math.max(1, Math.ceil((atMs - nowMs) / 1000));
}
