/**
 * Webhook dispatch runs (docs/webhooks.md#design): unless nothing is due, prune, fan out (./fan-out.ts) and attempt the due queue
 * heads (./delivery.ts) in rounds. `WebhookDispatcher` runs them for one runtime instance.
 */
import { and, eq, inArray, lt, lte, sql } from "drizzle-orm";
import { alias } from "drizzle-orm/sqlite-core";
import type { AppConfig } from "../../config";
import { boundedDelete } from "../../db/bounded-delete";
import { qb, type Database } from "../../db/client";
import { execute, params, plan, run, statement, type ResultOf } from "../../db/plan";
import { variants } from "../../db/variants";
import { events, webhookDeliveries, webhookFanout, webhooks } from "../../db/schema";
import { loggableError } from "../../logger";
import { attemptAll, claim, type FetchFn, type Head } from "./delivery";
import { fanOut, fanOutRange, skipTo, yieldToEventLoop } from "./fan-out";
import type { SubscribedTypes } from "./interest";
import { retentionStart } from "./schedule";

/** What a dispatch run needs, and its limits. */
export interface DispatchOptions {
  config: AppConfig;
  /** Clock (injected by tests); read before each step. */
  now: () => Date;
  /** HTTP client (the runtime's `fetch`). */
  fetch: FetchFn;
  /** Most attempts made by one run (default 2,000). */
  budget?: number;
  /** Jitter source in [0, 1) (default Math.random). */
  random?: () => number;
  /** When aborted, no further attempt nor fan-out batch starts (attempts in flight finish and are recorded). */
  signal?: AbortSignal;
  /** No attempt nor fan-out batch starts later than this after the run began, ms (default 20 000; Workers' waitUntil allows about 30 s). */
  maxRunMs?: number;
  /** Learns which event types the subscriptions want (read at the start of the run). */
  interest?: SubscribedTypes;
  /** A timer's poll: its probe does not ask whether any subscription exists, so an idle poll reads 3 rows. */
  poll?: boolean;
}

/** What one `dispatchDue` run did. */
export interface DispatchReport {
  /** Delivery rows created by the fan-out. */
  queued: number;
  attempted: number;
  delivered: number;
  /** Failed attempts that were rescheduled. */
  retried: number;
  /** Deliveries given up after `maxAttempts` (their subscriptions are now `failing`). */
  givenUp: number;
}

/** Subscriptions (their queue heads) attempted per round. */
const HEAD_LIMIT = 16;
/** Finished deliveries deleted per run at most (one bounded statement). */
const PRUNE_BATCH = 1000;

const d = webhookDeliveries;
/** A subscription's queue, looked up from its head (correlated subquery alias). */
const queue = alias(webhookDeliveries, "p");

/** Is anything due: events after the fan-out cursor, or a pending delivery due at `now` (3 rows read)? `learning`: also whether any subscription exists. */
const due = params<{ now: string }>();
const anythingDue = variants((learning: boolean) =>
  due.prepare(
    qb
      .select({
        subscribed: learning ? sql<number | null>`EXISTS (SELECT 1 FROM ${webhooks})` : sql<number | null>`NULL`,
        due: sql<number>`EXISTS (SELECT 1 FROM ${events} WHERE ${events.id} > ${webhookFanout.lastEventId})
        OR EXISTS (SELECT 1 FROM ${d} WHERE ${d.status} = 'pending' AND ${d.nextAttemptAt} <= ${due("now")})`,
      })
      .from(webhookFanout)
      .where(eq(webhookFanout.id, 1)),
  ),
);

/** Up to `PRUNE_BATCH` finished deliveries that finished before `finishedBefore`, found through the (status, next_attempt_at) index. */
const finished = params<{ finishedBefore: string }>();
export const pruneFinishedDeliveries = finished.prepare(
  boundedDelete(d, d.id, and(inArray(d.status, ["delivered", "failed"]), lt(d.nextAttemptAt, finished("finishedBefore"))), PRUNE_BATCH),
);

/** The start of a run: retention, the fan-out range, and what the subscriptions want. */
const start = plan({
  prune: statement(pruneFinishedDeliveries),
  range: statement(fanOutRange),
  subscriptions: statement(params<Record<never, never>>().prepare(qb.select({ events: webhooks.events }).from(webhooks))),
});

/** Due queue heads: each subscription's pending delivery with the lowest event id, when due at `now`; oldest first, at most `limit`. */
const heads = params<{ now: string; limit: number }>();
const dueHeads = heads.prepare(
  qb
    .select({
      id: d.id,
      webhookId: d.webhookId,
      eventId: d.eventId,
      url: webhooks.url,
      secret: webhooks.secret,
      type: events.type,
      occurredAt: events.occurredAt,
      data: events.data,
    })
    .from(webhooks)
    .innerJoin(
      d,
      eq(
        d.id,
        qb
          .select({ id: queue.id })
          .from(queue)
          .where(and(eq(queue.webhookId, webhooks.id), eq(queue.status, "pending")))
          .orderBy(queue.eventId)
          .limit(1),
      ),
    )
    .innerJoin(events, eq(events.id, d.eventId))
    .where(lte(d.nextAttemptAt, heads("now")))
    .orderBy(d.nextAttemptAt, d.id)
    .limit(heads("limit")),
);

/** The payload is the Event representation, exactly as GET /events shows it. */
function toHead(row: ResultOf<typeof dueHeads>[number]): Head {
  const body = JSON.stringify({ id: row.eventId, type: row.type, occurredAt: row.occurredAt, data: JSON.parse(row.data) as unknown });
  return { id: row.id, webhookId: row.webhookId, eventId: row.eventId, url: row.url, secret: row.secret, body };
}

/**
 * Run the delivery pipeline once; an all-zero report when webhooks are disabled (previews, docs/deployment.md#previews-one-per-branch).
 * @throws the driver's error when the database fails (attempt failures are recorded, not thrown).
 */
export async function dispatchDue(db: Database, options: DispatchOptions): Promise<DispatchReport> {
  const report: DispatchReport = { queued: 0, attempted: 0, delivered: 0, retried: 0, givenUp: 0 };
  const { config, now, signal } = options;
  if (!config.webhooks.enabled) return report;
  const random = options.random ?? Math.random;
  let budget = options.budget ?? 2000;
  const first = now();
  const deadline = first.getTime() + (options.maxRunMs ?? 20_000);
  const stop = () => signal?.aborted === true || now().getTime() >= deadline;

  const mark = options.interest?.mark();
  const learning = options.poll !== true && options.interest?.stale() === true;
  const [probe] = await execute(db, anythingDue(learning), { now: first.toISOString() });
  if (probe?.subscribed === 0 && mark) options.interest?.learn(mark, []);
  if (!probe?.due) return report;
  const { range, subscriptions } = await run(db, start, { finishedBefore: retentionStart(first).toISOString() });
  const lists = subscriptions.map((s) => s.events);
  if (mark) options.interest?.learn(mark, lists);
  const [{ maxEvent, from } = { maxEvent: 0, from: null }] = range;
  // Deliveries go with their subscription: without one, nothing is pending, and the cursor skips the events.
  if (subscriptions.length === 0) {
    await skipTo(db, maxEvent);
    return report;
  }
  report.queued = await fanOut(db, { from, to: maxEvent, maxPendingPerFailing: config.webhooks.maxPendingPerFailing, now, stop });

  while (budget > 0 && !stop()) {
    const at = now();
    const heads = (await execute(db, dueHeads, { now: at.toISOString(), limit: Math.min(HEAD_LIMIT, budget) })).map(toHead);
    if (heads.length === 0) break;
    budget -= heads.length;
    const claimed = await claim(db, heads, { now: at, timeoutMs: config.webhooks.timeoutMs });
    const outcomes = await attemptAll(db, claimed, { config, now, fetch: options.fetch, random });
    report.attempted += claimed.length;
    for (const outcome of outcomes) report[outcome] += 1;
    await yieldToEventLoop();
  }
  return report;
}

/** Runs dispatch runs for one runtime instance, on a timer (Node) and when nudged; never two at once: a nudge during a run makes one more. Errors are logged. */
export class WebhookDispatcher {
  private running: Promise<void> | undefined;
  private again = false;
  /** Whether the next run is only a timer's poll (no nudge asked for it since). */
  private pollOnly = true;
  private timer: ReturnType<typeof setInterval> | undefined;
  private stopped = false;
  private soon: ReturnType<typeof setTimeout> | undefined;
  private readonly stopping = new AbortController();

  /** @param run one dispatch run (`poll`: only a timer asked for it); its signal aborts when `stop()` is called. */
  constructor(
    private readonly run: (signal: AbortSignal, poll: boolean) => Promise<unknown>,
    private readonly log: (line: string) => void = (line) => console.error(line),
  ) {}

  /** Run now (or once more after the current run); resolves when the runs are done. `poll`: a timer asks. */
  nudge(poll = false): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (!poll) this.pollOnly = false;
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      try {
        do {
          this.again = false;
          const pollOnly = this.pollOnly;
          this.pollOnly = true;
          try {
            await this.run(this.stopping.signal, pollOnly);
          } catch (error) {
            this.log(`webhook dispatch failed: ${loggableError(error).message}`);
          }
        } while (this.again && !this.stopped);
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }

  /** Run within `delayMs` unless a run is already scheduled that way: a burst of writes becomes one run. The timer does not keep the process alive. */
  nudgeSoon(delayMs: number): void {
    if (this.stopped || this.soon) return;
    this.soon = setTimeout(() => {
      this.soon = undefined;
      void this.nudge();
    }, delayMs);
    (this.soon as { unref?: () => void }).unref?.();
  }

  /** Poll every `intervalMs` (Node). The timer does not keep the process alive. */
  start(intervalMs: number): this {
    this.timer ??= setInterval(() => void this.nudge(true), intervalMs);
    (this.timer as { unref?: () => void }).unref?.();
    return this;
  }

  /** Stop polling and nudges; the current run starts no new attempt; resolves when it has finished. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.stopping.abort();
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    if (this.soon) clearTimeout(this.soon);
    this.soon = undefined;
    await this.running;
  }
}

/** What `createWebhookDispatcher` needs: the run's options (clock and `fetch` default to the runtime's), and where failures are logged. */
export type DispatcherOptions = Omit<DispatchOptions, "now" | "fetch" | "signal" | "poll"> & {
  now?: () => Date;
  fetch?: FetchFn;
  log?: (line: string) => void;
};

/** A dispatcher whose runs are `dispatchDue(db, options)`. */
export function createWebhookDispatcher(db: Database, options: DispatcherOptions): WebhookDispatcher {
  const { log, now = () => new Date(), fetch: fetchFn = (input, init) => fetch(input, init), ...rest } = options;
  return new WebhookDispatcher((signal, poll) => dispatchDue(db, { ...rest, now, fetch: fetchFn, signal, poll }), log);
}
