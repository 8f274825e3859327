/**
 * Webhook delivery (API.md §6): at least once, in order per subscription,
 * signed per Standard Webhooks (src/services/webhook-signing.ts).
 *
 * Design: the `events` table is the outbox and the only thing writers touch.
 * `dispatchDue` is a plain function that both runtimes and the tests call:
 *
 * 1. Fan-out. Each subscription has a cursor `last_event_id`. A write batch
 *    inserts a `webhook_deliveries` row for every (subscription, event) with
 *    `last_event_id < event.id <= M` whose type the subscription wants, and
 *    moves the cursors to M. Because event ids are assigned in commit order
 *    (single writer), no event can appear below a cursor later, so every
 *    wanted event gets exactly one row (`UNIQUE (webhook_id, event_id)` backs
 *    this up). Event writers need no change and pay nothing for webhooks. An
 *    idle run costs one write batch (step 5 and a read of the cursors) and
 *    one read. Bounded (API.md §6): M moves at most
 *    `FANOUT_STEP_EVENTS` events per batch (≤ 50 subscriptions × 10 events =
 *    500 rows), and the run yields to the event loop between batches, so a
 *    backlog of thousands of events never holds the database or the process
 *    for long; a `failing` subscription gets no new row once it has
 *    `maxPendingPerFailing` (10,000) pending — the events it misses stay in
 *    `GET /events`.
 * 2. Heads. A subscription's queue head is its pending delivery with the
 *    lowest event id. Only heads are attempted, so event N+1 is never sent
 *    before event N was delivered or given up.
 * 3. Claim. A due head is claimed with a conditional UPDATE that counts the
 *    attempt and pushes `next_attempt_at` to a lease (timeout + 30 s): two
 *    dispatchers (poller + nudge, several Worker invocations) never send the
 *    same attempt twice, and an attempt lost with its process is retried when
 *    the lease ends.
 * 4. Attempt: POST the Event JSON with the signature headers, no redirects
 *    followed, `timeoutMs`. 2xx = delivered (a `failing` subscription becomes
 *    `active` again). Otherwise the next attempt is due after
 *    `backoffDelayMs(attempts)`; after `maxAttempts` the delivery is `failed`
 *    (given up), the subscription is marked `failing`, and its next event
 *    becomes the head — a dead receiver never blocks its own later events for
 *    longer than the retry schedule.
 *
 * Rounds: steps 2–4 run in rounds. A round reads the due heads of up to
 * `HEAD_LIMIT` (16) subscriptions, oldest first, claims them in one write
 * batch, sends them at once and records the results in one write batch, then
 * yields to the event loop. On Node the embedded database runs (and fsyncs)
 * on the main thread, so a request waits behind at most one such batch: few,
 * small commits keep request handling responsive while a backlog drains
 * (`npm run bench:webhooks`: 16 per round halved /health's p99 against 50 at
 * the same delivery rate). A round lasts as long as its slowest receiver
 * (≤ `timeoutMs`); a receiver that timed out is not due again before its
 * backoff, so it slows at most one round per retry.
 *
 * 5. Retention. Each run first deletes up to `PRUNE_BATCH` delivered and
 *    given-up deliveries that finished more than 7 days ago (`next_attempt_at`
 *    holds a finished delivery's finish time, see src/db/schema.ts).
 *
 * A run starts no attempt (nor fan-out batch) after `maxRunMs` (default 20 s)
 * or once its signal is aborted (shutdown); whatever is left is due for the
 * next run.
 *
 * Statements: Drizzle (query builder, `sql` with schema columns), prepared
 * once per database; writes go as one `writeBatch` each (src/db/batch.ts).
 *
 * Runtimes: Node runs a `WebhookDispatcher` that polls every `pollIntervalMs`
 * and is nudged after each successful write (src/server.ts); Workers nudge it
 * in `ctx.waitUntil` after a write and retry due deliveries from a Cron
 * Trigger (src/worker.ts).
 */
import type { AppConfig } from "../config";
import type { Database } from "../db/client";
import { and, eq, gt, inArray, lt, lte, ne, or, sql } from "drizzle-orm";
import { alias } from "drizzle-orm/sqlite-core";
import { type BatchStep, perDatabase, step, writeBatch } from "../db/batch";
import { events, webhookDeliveries, webhooks } from "../db/schema";
import { loggableError } from "../lib/errors";
import { isPrivateHost, type DeliveryError } from "./webhooks.service";
import { signedWebhookHeaders, webhookMessageId } from "./webhook-signing";

/** `fetch` as the dispatcher uses it (injectable for tests). */
export type FetchFn = (input: string, init: RequestInit) => Promise<Response>;

export interface DispatchOptions {
  /** Most attempts made by one run (default 2,000). */
  budget?: number;
  /** Jitter source in [0, 1) (default Math.random). */
  random?: () => number;
  /** When aborted, no further attempt is started (attempts in flight finish and are recorded). */
  signal?: AbortSignal;
  /**
   * No attempt starts later than this after the run began, ms (default 20 000):
   * bounds a run (Workers' waitUntil allows about 30 s) and keeps one slow
   * receiver's backlog from delaying the next run, which serves everyone again.
   */
  maxRunMs?: number;
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

/** Subscriptions (their queue heads) attempted per round, see "Rounds" above. */
const HEAD_LIMIT = 16;
/** Events fanned out per write batch: at most 50 subscriptions × 10 = 500 rows. */
const FANOUT_STEP_EVENTS = 10;
/** Delivered and given-up deliveries are kept this long, ms (API.md §6: 7 days). */
export const DELIVERY_RETENTION_MS = 7 * 24 * 3600 * 1000;
/** Finished deliveries deleted per run at most (one bounded statement). */
const PRUNE_BATCH = 1000;
/** Extra lease beyond the attempt timeout before a claimed attempt counts as lost, ms. */
const LEASE_MARGIN_MS = 30_000;

/**
 * Delay before attempt `attempt + 1` after `attempt` failed (1-based), ms:
 * exponential `min(cap, base * 2^(attempt-1))` with "equal jitter" (half
 * fixed, half random), so retries of many subscriptions spread out but never
 * come back sooner than half the nominal delay.
 */
export function backoffDelayMs(attempt: number, baseMs: number, capMs: number, random: () => number = Math.random): number {
  const nominal = Math.min(capMs, baseMs * 2 ** Math.min(Math.max(attempt - 1, 0), 40));
  return Math.round(nominal / 2 + random() * (nominal / 2));
}

interface Head {
  id: number;
  webhookId: number;
  eventId: number;
  url: string;
  secret: string;
  body: string;
}

interface Claimed extends Head {
  attempts: number;
}

/**
 * The dispatcher's statements, prepared once per database (src/db/batch.ts
 * `perDatabase`); per-run values are placeholders.
 */
const queries = perDatabase((db) => {
  const d = webhookDeliveries;
  /** A subscription's queue, looked up from its head (correlated subquery alias). */
  const queue = alias(webhookDeliveries, "p");
  /** Pending deliveries per `failing` subscription (fan-out bound, step 1). */
  const backlog = db.$with("backlog").as(
    db
      .select({ webhookId: d.webhookId, pending: sql<number>`count(*)`.as("pending") })
      .from(d)
      .where(and(eq(d.status, "pending"), inArray(d.webhookId, db.select({ id: webhooks.id }).from(webhooks).where(eq(webhooks.status, "failing")))))
      .groupBy(d.webhookId),
  );
  /** Every (subscription, event) with `last_event_id < event.id <= upTo` whose type the subscription wants, numbered per subscription. */
  const wanted = db.$with("wanted").as(
    db
      .select({
        webhookId: sql<number>`${webhooks.id}`.as("webhook_id"),
        eventId: sql<number>`${events.id}`.as("event_id"),
        status: sql<(typeof webhooks.$inferSelect)["status"]>`${webhooks.status}`.as("status"),
        pending: sql<number>`coalesce(${backlog.pending}, 0)`.as("pending"),
        position: sql<number>`row_number() OVER (PARTITION BY ${webhooks.id} ORDER BY ${events.id})`.as("position"),
      })
      .from(webhooks)
      .innerJoin(events, and(gt(events.id, webhooks.lastEventId), lte(events.id, sql.placeholder("upTo"))))
      .leftJoin(backlog, eq(backlog.webhookId, webhooks.id))
      .where(sql`${webhooks.events} = '["*"]' OR EXISTS (SELECT 1 FROM json_each(${webhooks.events}) j WHERE j.value = ${events.type})`),
  );
  return {
    /** Retention (step 5): up to `PRUNE_BATCH` finished deliveries older than `before`; the (status, next_attempt_at) index finds them. */
    prune: db
      .delete(d)
      .where(
        inArray(
          d.id,
          db
            .select({ id: d.id })
            .from(d)
            .where(and(inArray(d.status, ["delivered", "failed"]), lt(d.nextAttemptAt, sql.placeholder("before"))))
            .limit(PRUNE_BATCH),
        ),
      )
      .prepare(),
    /** The newest event id and the lowest fan-out cursor (null without subscriptions). */
    cursors: db
      .select({
        maxEvent: sql<number>`coalesce(max(${events.id}), 0)`,
        minCursor: sql<number | null>`(SELECT min(${webhooks.lastEventId}) FROM ${webhooks})`,
      })
      .from(events)
      .prepare(),
    /**
     * Fan-out (step 1): the missing delivery rows for events up to `upTo`; a
     * `failing` subscription gets rows only while it has fewer than
     * `maxPending` pending (its pending count plus the row's position).
     */
    fanOut: db
      .with(backlog, wanted)
      .insert(d)
      .select(
        // Every column in table order (Drizzle's insert-select); a select from a CTE needs its SQL fields aliased.
        db
          .select({
            id: sql<number>`NULL`.as("id"),
            webhookId: wanted.webhookId,
            eventId: wanted.eventId,
            status: sql<"pending">`'pending'`.as("status"),
            attempts: sql<number>`0`.as("attempts"),
            nextAttemptAt: sql<string>`${sql.placeholder("now")}`.as("next_attempt_at"),
            lastStatusCode: sql<null>`NULL`.as("last_status_code"),
            lastError: sql<null>`NULL`.as("last_error"),
            lastAttemptAt: sql<null>`NULL`.as("last_attempt_at"),
            deliveredAt: sql<null>`NULL`.as("delivered_at"),
          })
          .from(wanted)
          .where(or(ne(wanted.status, "failing"), lte(sql`${wanted.pending} + ${wanted.position}`, sql.placeholder("maxPending"))))
          // `sql` around CTE fields: orderBy takes columns or SQL, not aliased fields.
          .orderBy(sql`${wanted.webhookId}`, sql`${wanted.eventId}`),
      )
      .onConflictDoNothing({ target: [d.webhookId, d.eventId] })
      .prepare(),
    /** Moves every cursor below `upTo` to `upTo` (after `fanOut`, in its batch). */
    advanceCursors: db
      .update(webhooks)
      .set({ lastEventId: sql`${sql.placeholder("upTo")}` })
      .where(lt(webhooks.lastEventId, sql.placeholder("upTo")))
      .prepare(),
    /**
     * Due queue heads (step 2): for each subscription (at most 50), its pending
     * delivery with the lowest event id, found through the (webhook_id, status,
     * event_id) index, kept when due at `now`; oldest first, at most `limit`.
     * Cost grows with the number of subscriptions, not with the backlog.
     */
    heads: db
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
          db
            .select({ id: queue.id })
            .from(queue)
            .where(and(eq(queue.webhookId, webhooks.id), eq(queue.status, "pending")))
            .orderBy(queue.eventId)
            .limit(1),
        ),
      )
      .innerJoin(events, eq(events.id, d.eventId))
      .where(lte(d.nextAttemptAt, sql.placeholder("now")))
      .orderBy(d.nextAttemptAt, d.id)
      .limit(sql.placeholder("limit"))
      .prepare(),
    /** Claim (step 3): counts the attempt and leases the delivery until `leaseEnd`, if still pending and due at `now`. */
    claim: db
      .update(d)
      .set({ attempts: sql`${d.attempts} + 1`, nextAttemptAt: sql`${sql.placeholder("leaseEnd")}`, lastAttemptAt: sql`${sql.placeholder("now")}` })
      .where(and(eq(d.id, sql.placeholder("id")), eq(d.status, "pending"), lte(d.nextAttemptAt, sql.placeholder("now"))))
      .returning({ attempts: d.attempts })
      .prepare(),
    /** A 2xx answer: the delivery is done at `now`. */
    delivered: db
      .update(d)
      .set({
        status: "delivered",
        deliveredAt: sql`${sql.placeholder("now")}`,
        nextAttemptAt: sql`${sql.placeholder("now")}`,
        lastStatusCode: sql`${sql.placeholder("statusCode")}`,
        lastError: null,
      })
      .where(and(eq(d.id, sql.placeholder("id")), eq(d.status, "pending")))
      .prepare(),
    /** A delivery made it: its subscription is healthy again. */
    reactivate: db
      .update(webhooks)
      .set({ status: "active" })
      .where(and(eq(webhooks.id, sql.placeholder("webhookId")), eq(webhooks.status, "failing")))
      .prepare(),
    /** The last attempt failed: the delivery is given up at `now`, if this run's claim (`attempts`) still holds. */
    givenUp: db
      .update(d)
      .set({
        status: "failed",
        nextAttemptAt: sql`${sql.placeholder("now")}`,
        lastStatusCode: sql`${sql.placeholder("statusCode")}`,
        lastError: sql`${sql.placeholder("error")}`,
      })
      .where(and(eq(d.id, sql.placeholder("id")), eq(d.status, "pending"), eq(d.attempts, sql.placeholder("attempts"))))
      .prepare(),
    /** After `givenUp` in the same batch: marks the subscription `failing` only when the delivery was given up just before. */
    markFailing: db
      .update(webhooks)
      .set({ status: "failing" })
      .where(and(eq(webhooks.id, sql.placeholder("webhookId")), sql`changes() = 1`))
      .prepare(),
    /** A failed attempt with attempts left: the next is due at `next`, if this run's claim (`attempts`) still holds. */
    retry: db
      .update(d)
      .set({
        nextAttemptAt: sql`${sql.placeholder("next")}`,
        lastStatusCode: sql`${sql.placeholder("statusCode")}`,
        lastError: sql`${sql.placeholder("error")}`,
      })
      .where(and(eq(d.id, sql.placeholder("id")), eq(d.status, "pending"), eq(d.attempts, sql.placeholder("attempts"))))
      .prepare(),
  };
});

/** Let pending I/O callbacks (e.g. HTTP requests on Node, where the embedded database runs on the main thread) run. */
const yieldToEventLoop = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

type HeadRow = Awaited<ReturnType<ReturnType<typeof queries>["heads"]["all"]>>[number];

function toHead(row: HeadRow): Head {
  // The payload is the Event representation, exactly as GET /events shows it.
  const body = JSON.stringify({ id: row.eventId, type: row.type, occurredAt: row.occurredAt, data: JSON.parse(row.data) as unknown });
  return { id: row.id, webhookId: row.webhookId, eventId: row.eventId, url: row.url, secret: row.secret, body };
}

/**
 * Create the missing delivery rows for events up to `upToEventId` (step 1
 * above) and move the cursors there, in one write batch. A `failing`
 * subscription gets rows only while it has fewer than `maxPendingPerFailing`
 * pending. Returns how many rows were created.
 */
async function fanOut(db: Database, upToEventId: number, maxPendingPerFailing: number, nowIso: string): Promise<number> {
  const q = queries(db);
  const [inserted] = await writeBatch(db, [
    step(q.fanOut, { upTo: upToEventId, now: nowIso, maxPending: maxPendingPerFailing }),
    step(q.advanceCursors, { upTo: upToEventId }),
  ] as const);
  return inserted.rowsAffected;
}

/** Claim due heads (step 3) in one write batch; returns those this run won, with their attempt number. */
async function claim(db: Database, heads: Head[], now: Date, leaseMs: number): Promise<Claimed[]> {
  if (heads.length === 0) return [];
  const nowIso = now.toISOString();
  const leaseEnd = new Date(now.getTime() + leaseMs).toISOString();
  const q = queries(db);
  const results = await writeBatch(
    db,
    heads.map((h) => step(q.claim, { id: h.id, now: nowIso, leaseEnd })),
  );
  const claimed: Claimed[] = [];
  heads.forEach((h, i) => {
    const row = results[i]?.[0];
    if (row) claimed.push({ ...h, attempts: row.attempts });
  });
  return claimed;
}

interface AttemptResult {
  ok: boolean;
  statusCode: number | null;
  error: DeliveryError | null;
}

const DNS_CODES = new Set(["ENOTFOUND", "EAI_AGAIN", "EAI_NODATA", "EAI_FAIL", "EAI_NONAME"]);
const TIMEOUT_CODES = new Set(["ETIMEDOUT", "UND_ERR_CONNECT_TIMEOUT", "UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"]);

/**
 * Classify a failed `fetch`: Node (undici) puts the system error code in the
 * `cause` chain (`ECONNREFUSED`, `ENOTFOUND`, `ERR_TLS_*`, `CERT_*`…);
 * workerd only gives a message, matched by words.
 */
export function classifyFetchError(error: unknown): DeliveryError {
  const codes: string[] = [];
  const messages: string[] = [];
  for (
    let e = error as { name?: unknown; code?: unknown; message?: unknown; cause?: unknown } | undefined, depth = 0;
    e && depth < 5;
    e = e.cause as typeof e, depth++
  ) {
    if (e.name === "TimeoutError" || e.name === "AbortError") return "timeout";
    if (typeof e.code === "string") codes.push(e.code);
    if (typeof e.message === "string") messages.push(e.message);
  }
  if (codes.includes("EPRIVATEADDRESS")) return "private_address";
  if (codes.includes("ECONNREFUSED")) return "refused";
  if (codes.some((c) => DNS_CODES.has(c))) return "dns";
  if (codes.some((c) => TIMEOUT_CODES.has(c))) return "timeout";
  if (codes.some((c) => /^(ERR_TLS|ERR_SSL|CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED|HOSTNAME_MISMATCH)/.test(c))) return "tls";
  const text = messages.join(" ");
  if (/\b(dns|resolve|lookup)\b/i.test(text)) return "dns";
  if (/refused/i.test(text)) return "refused";
  if (/\b(tls|ssl|certificate|handshake)\b/i.test(text)) return "tls";
  if (/timed? ?out/i.test(text)) return "timeout";
  return "network";
}

/** Send one signed attempt (step 4). Never throws. */
async function attempt(head: Claimed, config: AppConfig, at: Date, fetchFn: FetchFn): Promise<AttemptResult> {
  // IP literals are never looked up: check them here (names are checked at connect time, src/runtime/node-webhook-fetch.ts).
  if (!config.webhooks.allowPrivateTargets && isPrivateHost(new URL(head.url).hostname)) {
    return { ok: false, statusCode: null, error: "private_address" };
  }
  const headers = signedWebhookHeaders(head.secret, webhookMessageId(head.eventId), at, head.body);
  try {
    const res = await fetchFn(head.url, {
      method: "POST",
      headers,
      body: head.body,
      redirect: "manual",
      signal: AbortSignal.timeout(config.webhooks.timeoutMs),
    });
    await res.body?.cancel().catch(() => {});
    const ok = res.status >= 200 && res.status < 300;
    return { ok, statusCode: res.status, error: ok ? null : "http_status" };
  } catch (error) {
    return { ok: false, statusCode: null, error: classifyFetchError(error) };
  }
}

type Outcome = "delivered" | "retried" | "givenUp";

/** The statements that record an attempt's result, and what becomes of the delivery. */
function recording(
  db: Database,
  head: Claimed,
  result: AttemptResult,
  config: AppConfig,
  now: Date,
  random: () => number,
): { steps: BatchStep<unknown>[]; outcome: Outcome } {
  const q = queries(db);
  const nowIso = now.toISOString();
  const { statusCode, error } = result;
  if (result.ok) {
    return {
      outcome: "delivered",
      steps: [step(q.delivered, { id: head.id, now: nowIso, statusCode }), step(q.reactivate, { webhookId: head.webhookId })],
    };
  }
  const { maxAttempts, retryBaseMs, retryCapMs } = config.webhooks;
  if (head.attempts >= maxAttempts) {
    return {
      outcome: "givenUp",
      steps: [
        step(q.givenUp, { id: head.id, attempts: head.attempts, now: nowIso, statusCode, error }),
        // Never a batch's first statement: it follows its own `givenUp`.
        step(q.markFailing, { webhookId: head.webhookId }),
      ],
    };
  }
  const next = new Date(now.getTime() + backoffDelayMs(head.attempts, retryBaseMs, retryCapMs, random)).toISOString();
  return { outcome: "retried", steps: [step(q.retry, { id: head.id, attempts: head.attempts, next, statusCode, error })] };
}

/**
 * Run the delivery pipeline once: prune, fan out new events, then attempt
 * due queue heads in rounds until none is due (following each subscription's
 * queue while its deliveries succeed or are given up). Resolves when done;
 * throws only when the database fails. Does nothing (an all-zero report) when
 * `config.webhooks.enabled` is false: every runtime's dispatch — the Worker's
 * after-write nudge and Cron Trigger, the Node poller — goes through here.
 *
 * @param now clock (injected by tests); read before each step.
 * @param fetchFn HTTP client (the runtime's `fetch`).
 */
export async function dispatchDue(db: Database, config: AppConfig, now: () => Date, fetchFn: FetchFn, options: DispatchOptions = {}): Promise<DispatchReport> {
  // Deliveries switched off (previews, API.md §8.2): no fan-out, no attempt, nothing sent.
  if (!config.webhooks.enabled) return { queued: 0, attempted: 0, delivered: 0, retried: 0, givenUp: 0 };
  const random = options.random ?? Math.random;
  let budget = options.budget ?? 2000;
  const report: DispatchReport = { queued: 0, attempted: 0, delivered: 0, retried: 0, givenUp: 0 };
  const leaseMs = config.webhooks.timeoutMs + LEASE_MARGIN_MS;

  const first = now();
  const deadline = first.getTime() + (options.maxRunMs ?? 20_000);
  const mayStart = () => budget > 0 && !options.signal?.aborted && now().getTime() < deadline;
  const pruneBefore = new Date(first.getTime() - DELIVERY_RETENTION_MS).toISOString();
  const q = queries(db);
  const [, [cursors]] = await writeBatch(db, [step(q.prune, { before: pruneBefore }), step(q.cursors)] as const);
  const { maxEvent, minCursor } = cursors!;
  if (minCursor !== null) {
    // Fan out in bounded steps, yielding between them (step 1).
    for (let upTo = minCursor; upTo < maxEvent && !options.signal?.aborted && now().getTime() < deadline; ) {
      upTo = Math.min(maxEvent, upTo + FANOUT_STEP_EVENTS);
      report.queued += await fanOut(db, upTo, config.webhooks.maxPendingPerFailing, now().toISOString());
      await yieldToEventLoop();
    }
  }
  // Rounds (steps 2–4): every subscription's due head, claimed in one batch, sent at once, recorded in one batch.
  while (mayStart()) {
    const at = now();
    const heads = (await q.heads.all({ now: at.toISOString(), limit: Math.min(HEAD_LIMIT, budget) })).map(toHead);
    if (heads.length === 0) break;
    budget -= heads.length;
    const claimed = await claim(db, heads, at, leaseMs);
    const results = await Promise.all(claimed.map((head) => attempt(head, config, now(), fetchFn)));
    const done = now();
    const recorded = claimed.map((head, i) => recording(db, head, results[i]!, config, done, random));
    if (recorded.length > 0)
      await writeBatch(
        db,
        recorded.flatMap((r) => r.steps),
      );
    report.attempted += claimed.length;
    for (const r of recorded) report[r.outcome] += 1;
    await yieldToEventLoop();
  }
  return report;
}

/**
 * Runs `dispatchDue` for one runtime instance: on a timer (Node) and when
 * nudged after a write (both runtimes). Runs never overlap; a nudge during a
 * run schedules exactly one more run, and its promise settles after that run
 * (suitable for Workers' `ctx.waitUntil`). Errors are logged, never thrown.
 */
export class WebhookDispatcher {
  private running: Promise<void> | undefined;
  private again = false;
  private timer: ReturnType<typeof setInterval> | undefined;
  private stopped = false;
  private soon: ReturnType<typeof setTimeout> | undefined;
  private readonly stopping = new AbortController();

  /** @param run one dispatch run; its signal aborts when `stop()` is called. */
  constructor(
    private readonly run: (signal: AbortSignal) => Promise<unknown>,
    private readonly log: (line: string) => void = (line) => console.error(line),
  ) {}

  /** Run now (or once more after the current run); resolves when the runs are done. */
  nudge(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      try {
        do {
          this.again = false;
          try {
            await this.run(this.stopping.signal);
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

  /**
   * Run within `delayMs` unless a run is already scheduled that way: coalesces a
   * burst of writes into one run (Node; a run per write measured ~30 % of write
   * throughput). The timer does not keep the process alive.
   */
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
    this.timer ??= setInterval(() => void this.nudge(), intervalMs);
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

/** A dispatcher over `dispatchDue` with the runtime's clock and `fetch`. */
export function createWebhookDispatcher(
  db: Database,
  config: AppConfig,
  clock: () => Date = () => new Date(),
  fetchFn: FetchFn = (input, init) => fetch(input, init),
  log?: (line: string) => void,
): WebhookDispatcher {
  return new WebhookDispatcher((signal) => dispatchDue(db, config, clock, fetchFn, { signal }), log);
}
