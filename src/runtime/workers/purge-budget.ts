/** Edge-cache purge budget: which tags to purge when, within the Free-tier limits (docs/caching.md#limits-we-design-for); pure, clock injected. */

/** Rounding slack on fractional tokens. */
const EPSILON = 1e-9;
/** Pending entries kept apart; beyond, those due in the same second merge (due ≤ 1 s later), keeping the stored state small. */
const MAX_PENDING_ENTRIES = 500;
/** Longest `source` kept on a merged entry, characters. */
const MAX_SOURCE_LENGTH = 200;

/** A token bucket: `perMinute` refill, `burst` capacity, `maxTags` per call. */
export interface PurgeBudget {
  perMinute: number;
  burst: number;
  maxTags: number;
}

export interface PurgePolicy {
  budget: PurgeBudget;
  /** Second purge of a write's tags this long after it (reads in flight at the write), ms. */
  repeatAfterMs: number;
  /** Longest an edge entry of a purged tag is served without a purge (edge max-age + stale-while-revalidate), ms. */
  lifetimeMs: number;
  /** Pause after a refused call, ms (the API's one-minute window). */
  retryAfterMs: number;
  /** A taken batch not settled within this is taken again, ms. */
  settleTimeoutMs: number;
}

export const DEFAULT_PURGE_POLICY: PurgePolicy = {
  // Below the Free tier, so one token a minute and 5 of the burst stay spare.
  budget: { perMinute: 4, burst: 20, maxTags: 100 },
  repeatAfterMs: 10_000,
  // EDGE_CACHE_CONTROL: max-age=30 + stale-while-revalidate=60.
  lifetimeMs: 90_000,
  retryAfterMs: 60_000,
  settleTimeoutMs: 30_000,
};

/** Tags one write made stale, due at `dueAt` (ms), useless after `expiresAt` (ms); `source` names the write (request id). */
export interface PendingPurge {
  tags: string[];
  source: string;
  dueAt: number;
  expiresAt: number;
}

/** The scheduler's plain state (stored as JSON by the Durable Object). */
export interface PurgeState {
  tokens: number;
  refilledAt: number;
  blockedUntil: number;
  nextBatchId: number;
  pending: PendingPurge[];
  /** Batches taken and not yet settled. */
  inFlight: { id: number; takenAt: number; parts: PendingPurge[] }[];
}

/** What became of a purge call. */
export type PurgeOutcome = "accepted" | "refused";

/** One purge call to make: ≤ `maxTags` distinct tags; `parts` say which write asked for which tags. */
export interface PurgeBatch {
  id: number;
  tags: string[];
  parts: { source: string; tags: string[] }[];
}

/** A fresh state at `now` (ms): full bucket, nothing pending. */
export function initialPurgeState(policy: PurgePolicy, now: number): PurgeState {
  return { tokens: policy.budget.burst, refilledAt: now, blockedUntil: 0, nextBatchId: 1, pending: [], inFlight: [] };
}

/** The purge decisions over one `PurgeState` (mutated in place); every method takes the time in ms. */
export class PurgeScheduler {
  constructor(
    readonly state: PurgeState,
    readonly policy: PurgePolicy = DEFAULT_PURGE_POLICY,
  ) {}

  /** Queue `tags` of one write (`source`: its request id) for a purge now and a second one after `repeatAfterMs`. */
  submit(tags: readonly string[], source: string, now: number): void {
    const { repeatAfterMs, lifetimeMs, budget } = this.policy;
    for (let i = 0; i < tags.length; i += budget.maxTags) {
      const chunk = tags.slice(i, i + budget.maxTags);
      this.state.pending.push(
        { tags: chunk, source, dueAt: now, expiresAt: now + lifetimeMs },
        { tags: [...chunk], source, dueAt: now + repeatAfterMs, expiresAt: now + repeatAfterMs + lifetimeMs },
      );
    }
    if (this.state.pending.length > MAX_PENDING_ENTRIES) this.compact();
  }

  /** The next call to make (takes a token; report it with `settle`), or undefined: nothing due, no token, or paused after a refusal. */
  take(now: number): PurgeBatch | undefined {
    this.refill(now);
    this.recoverLost(now);
    this.state.pending = this.state.pending.filter((p) => p.expiresAt > now);
    if (now < this.state.blockedUntil || this.state.tokens < 1 - EPSILON) return undefined;
    const tags = new Set<string>();
    const parts: PendingPurge[] = [];
    const rest: PendingPurge[] = [];
    for (const pending of this.state.pending) {
      const added = pending.tags.filter((t) => !tags.has(t));
      if (pending.dueAt <= now && tags.size + added.length <= this.policy.budget.maxTags) {
        for (const t of added) tags.add(t);
        parts.push(pending);
      } else {
        rest.push(pending);
      }
    }
    if (parts.length === 0) return undefined;
    this.state.tokens = Math.max(0, this.state.tokens - 1);
    this.state.pending = rest;
    const id = this.state.nextBatchId++;
    this.state.inFlight.push({ id, takenAt: now, parts });
    return { id, tags: [...tags], parts: parts.map(({ source, tags: partTags }) => ({ source, tags: partTags })) };
  }

  /** Report batch `id`: accepted, or refused (its tags go back, no call for `retryAfterMs`). */
  settle(id: number, outcome: PurgeOutcome, now: number): void {
    const inFlight = this.state.inFlight.find((b) => b.id === id);
    if (!inFlight) return;
    this.state.inFlight = this.state.inFlight.filter((b) => b !== inFlight);
    if (outcome === "accepted") return;
    this.state.pending.unshift(...inFlight.parts);
    this.refill(now);
    this.state.tokens = 0;
    this.state.blockedUntil = now + this.policy.retryAfterMs;
  }

  /** When `take` may next return a batch (ms), or undefined when nothing is pending. */
  nextWakeAt(now: number): number | undefined {
    this.refill(now);
    const live = this.state.pending.filter((p) => p.expiresAt > now);
    const lostAt = this.state.inFlight.map((b) => b.takenAt + this.policy.settleTimeoutMs);
    if (live.length === 0) return lostAt.length > 0 ? Math.max(now, Math.min(...lostAt)) : undefined;
    const due = Math.min(...live.map((p) => p.dueAt));
    const tokenAt = this.state.tokens >= 1 - EPSILON ? now : now + ((1 - this.state.tokens) * 60_000) / this.policy.budget.perMinute;
    return Math.min(Math.max(due, tokenAt, this.state.blockedUntil, now), ...lostAt.map((t) => Math.max(now, t)));
  }

  private refill(now: number): void {
    const { perMinute, burst } = this.policy.budget;
    const elapsed = Math.max(0, now - this.state.refilledAt);
    this.state.tokens = Math.min(burst, this.state.tokens + (elapsed * perMinute) / 60_000);
    this.state.refilledAt = Math.max(now, this.state.refilledAt);
  }

  /** Merge pending entries due in the same second (rounded up), ≤ `maxTags` tags each. */
  private compact(): void {
    const bySecond = new Map<number, PendingPurge[]>();
    for (const entry of this.state.pending) {
      const dueAt = Math.ceil(entry.dueAt / 1000) * 1000;
      const group = bySecond.get(dueAt) ?? [];
      bySecond.set(dueAt, group);
      const into = group.at(-1);
      const added = into ? entry.tags.filter((t) => !into.tags.includes(t)) : entry.tags;
      if (!into || into.tags.length + added.length > this.policy.budget.maxTags) {
        group.push({ ...entry, tags: [...entry.tags], dueAt });
        continue;
      }
      into.tags.push(...added);
      into.expiresAt = Math.max(into.expiresAt, entry.expiresAt);
      if (into.source.length < MAX_SOURCE_LENGTH) into.source = `${into.source},${entry.source}`;
    }
    this.state.pending = [...bySecond.entries()].sort(([a], [b]) => a - b).flatMap(([_second, group]) => group);
  }

  /** Batches never settled (their caller died) are queued again: a purge is never lost to a crash. */
  private recoverLost(now: number): void {
    const lost = this.state.inFlight.filter((b) => now >= b.takenAt + this.policy.settleTimeoutMs);
    if (lost.length === 0) return;
    this.state.inFlight = this.state.inFlight.filter((b) => !lost.includes(b));
    this.state.pending.unshift(...lost.flatMap((b) => b.parts));
  }
}
