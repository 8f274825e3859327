/**
 * Webhook delivery (API.md §6): at least once, in order per subscription,
 * signed per Standard Webhooks (src/services/webhook-signing.ts).
 *
 * Design: the `events` table is the outbox and the only thing writers touch.
 * `dispatchDue` is a plain function that both runtimes and the tests call:
 *
 * 1. Fan-out. Each subscription has a cursor `last_event_id`. One write batch
 *    inserts a `webhook_deliveries` row for every (subscription, event) with
 *    `last_event_id < event.id <= M` whose type the subscription wants, and
 *    moves the cursors to M (M = the last event id read just before). Because
 *    event ids are assigned in commit order (single writer), no event can
 *    appear below a cursor later, so every wanted event gets exactly one row
 *    (`UNIQUE (webhook_id, event_id)` backs this up). Event writers need no
 *    change and pay nothing for webhooks. An idle run costs one read.
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
 *    longer than the retry schedule, and never blocks other subscriptions,
 *    whose chains run concurrently.
 *
 * A run starts no attempt after `maxRunMs` (default 20 s) or once its signal
 * is aborted (shutdown); whatever is left is due for the next run.
 *
 * Runtimes: Node runs a `WebhookDispatcher` that polls every `pollIntervalMs`
 * and is nudged after each successful write (src/server.ts); Workers nudge it
 * in `ctx.waitUntil` after a write and retry due deliveries from a Cron
 * Trigger (src/worker.ts).
 */
import type { Context, MiddlewareHandler } from "hono";
import type { AppConfig } from "../config";
import type { Database } from "../db/client";
import { readBatch, writeBatch } from "../db/batch";
import type { AppEnv } from "../lib/context";
import { isPrivateHost } from "./webhooks.service";
import { signedWebhookHeaders, webhookMessageId } from "./webhook-signing";

/** `fetch` as the dispatcher uses it (injectable for tests). */
export type FetchFn = (input: string, init: RequestInit) => Promise<Response>;

export interface DispatchOptions {
  /** Most attempts made by one run (default 500). */
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

/** Heads fetched per query. */
const HEAD_LIMIT = 50;
/** Extra lease beyond the attempt timeout before a claimed attempt counts as lost, ms. */
const LEASE_MARGIN_MS = 30_000;
/** Longest `last_error` kept, characters. */
const MAX_ERROR_LENGTH = 300;

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

const HEADS_SQL = `
  SELECT d.id, d.webhook_id, d.event_id, w.url, w.secret, e.type, e.occurred_at, e.data
  FROM webhook_deliveries d
  JOIN webhooks w ON w.id = d.webhook_id
  JOIN events e ON e.id = d.event_id
  WHERE d.status = 'pending' AND d.next_attempt_at <= ? AND (? IS NULL OR d.webhook_id = ?)
    AND NOT EXISTS (SELECT 1 FROM webhook_deliveries p
                    WHERE p.webhook_id = d.webhook_id AND p.status = 'pending' AND p.event_id < d.event_id)
  ORDER BY d.next_attempt_at, d.id
  LIMIT ?`;

function headsStatement(nowIso: string, webhookId: number | null, limit: number) {
  return { sql: HEADS_SQL, args: [nowIso, webhookId, webhookId, limit] };
}

function toHead(row: Record<string, unknown>): Head {
  // The payload is the Event representation, exactly as GET /events shows it.
  const body = JSON.stringify({
    id: Number(row.event_id),
    type: String(row.type),
    occurredAt: String(row.occurred_at),
    data: JSON.parse(String(row.data)) as unknown,
  });
  return {
    id: Number(row.id),
    webhookId: Number(row.webhook_id),
    eventId: Number(row.event_id),
    url: String(row.url),
    secret: String(row.secret),
    body,
  };
}

/**
 * Create the missing delivery rows up to event `maxEventId` (step 1 above).
 * Returns how many rows were created.
 */
async function fanOut(db: Database, maxEventId: number, nowIso: string): Promise<number> {
  const [inserted] = await writeBatch(db, [
    {
      sql: `INSERT INTO webhook_deliveries (webhook_id, event_id, status, attempts, next_attempt_at)
            SELECT w.id, e.id, 'pending', 0, ?
            FROM webhooks w JOIN events e ON e.id > w.last_event_id AND e.id <= ?
            WHERE w.events = '["*"]' OR EXISTS (SELECT 1 FROM json_each(w.events) j WHERE j.value = e.type)
            ORDER BY w.id, e.id
            ON CONFLICT (webhook_id, event_id) DO NOTHING`,
      args: [nowIso, maxEventId],
    },
    { sql: "UPDATE webhooks SET last_event_id = ? WHERE last_event_id < ?", args: [maxEventId, maxEventId] },
  ]);
  return inserted!.rowsAffected;
}

/** Claim due heads (step 3); returns those this run won, with their attempt number. */
async function claim(db: Database, heads: Head[], now: Date, leaseMs: number): Promise<Claimed[]> {
  if (heads.length === 0) return [];
  const nowIso = now.toISOString();
  const leaseEnd = new Date(now.getTime() + leaseMs).toISOString();
  const results = await writeBatch(
    db,
    heads.map((h) => ({
      sql: `UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = ?, last_attempt_at = ?
            WHERE id = ? AND status = 'pending' AND next_attempt_at <= ? RETURNING attempts`,
      args: [leaseEnd, nowIso, h.id, nowIso],
    })),
  );
  const claimed: Claimed[] = [];
  heads.forEach((h, i) => {
    const row = results[i]!.rows[0];
    if (row) claimed.push({ ...h, attempts: Number(row.attempts) });
  });
  return claimed;
}

interface AttemptResult {
  ok: boolean;
  statusCode: number | null;
  error: string | null;
}

/** Send one signed attempt (step 4). Never throws. */
async function attempt(head: Claimed, config: AppConfig, at: Date, fetchFn: FetchFn): Promise<AttemptResult> {
  if (!config.webhooks.allowPrivateTargets && isPrivateHost(new URL(head.url).hostname)) {
    return { ok: false, statusCode: null, error: "Target not allowed: loopback, private or link-local address." };
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
    return { ok, statusCode: res.status, error: ok ? null : `The receiver answered HTTP ${res.status}.` };
  } catch (error) {
    const name = (error as { name?: string }).name;
    // Node's fetch reports "fetch failed" with the reason (ECONNREFUSED, ENOTFOUND…) in `cause`.
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    const reason = [error instanceof Error ? error.message : String(error), cause?.code ?? cause?.message].filter(Boolean).join(": ");
    const message = name === "TimeoutError" || name === "AbortError" ? `No response within ${config.webhooks.timeoutMs} ms.` : `Request failed: ${reason}`;
    return { ok: false, statusCode: null, error: message.slice(0, MAX_ERROR_LENGTH) };
  }
}

type Outcome = "delivered" | "retried" | "givenUp";

/** Record an attempt's result; returns what became of the delivery. */
async function record(db: Database, head: Claimed, result: AttemptResult, config: AppConfig, now: Date, random: () => number): Promise<Outcome> {
  const nowIso = now.toISOString();
  if (result.ok) {
    await writeBatch(db, [
      {
        sql: `UPDATE webhook_deliveries SET status = 'delivered', delivered_at = ?, last_status_code = ?, last_error = NULL
              WHERE id = ? AND status = 'pending'`,
        args: [nowIso, result.statusCode, head.id],
      },
      { sql: "UPDATE webhooks SET status = 'active' WHERE id = ? AND status = 'failing'", args: [head.webhookId] },
    ]);
    return "delivered";
  }
  const { maxAttempts, retryBaseMs, retryCapMs } = config.webhooks;
  if (head.attempts >= maxAttempts) {
    await writeBatch(db, [
      {
        sql: `UPDATE webhook_deliveries SET status = 'failed', last_status_code = ?, last_error = ?
              WHERE id = ? AND status = 'pending' AND attempts = ?`,
        args: [result.statusCode, result.error, head.id, head.attempts],
      },
      { sql: "UPDATE webhooks SET status = 'failing' WHERE id = ? AND changes() = 1", args: [head.webhookId] },
    ]);
    return "givenUp";
  }
  const next = new Date(now.getTime() + backoffDelayMs(head.attempts, retryBaseMs, retryCapMs, random)).toISOString();
  await writeBatch(db, [
    {
      sql: `UPDATE webhook_deliveries SET next_attempt_at = ?, last_status_code = ?, last_error = ?
            WHERE id = ? AND status = 'pending' AND attempts = ?`,
      args: [next, result.statusCode, result.error, head.id, head.attempts],
    },
  ]);
  return "retried";
}

/**
 * Run the delivery pipeline once: fan out new events, then attempt every due
 * queue head, following each subscription's queue while its deliveries
 * succeed (or are given up), subscriptions concurrently. Resolves when done;
 * throws only when the database fails. Does nothing (an all-zero report) when
 * `config.webhooks.enabled` is false: every runtime's dispatch — the Worker's
 * after-write nudge and Cron Trigger, the Node poller — goes through here.
 *
 * @param now clock (injected by tests); read before each step.
 * @param fetchFn HTTP client (the runtime's `fetch`).
 */
export async function dispatchDue(
  db: Database,
  config: AppConfig,
  now: () => Date,
  fetchFn: FetchFn,
  options: DispatchOptions = {},
): Promise<DispatchReport> {
  // Deliveries switched off (previews, API.md §8.2): no fan-out, no attempt, nothing sent.
  if (!config.webhooks.enabled) return { queued: 0, attempted: 0, delivered: 0, retried: 0, givenUp: 0 };
  const random = options.random ?? Math.random;
  let budget = options.budget ?? 500;
  const report: DispatchReport = { queued: 0, attempted: 0, delivered: 0, retried: 0, givenUp: 0 };
  const leaseMs = config.webhooks.timeoutMs + LEASE_MARGIN_MS;

  const first = now();
  const deadline = first.getTime() + (options.maxRunMs ?? 20_000);
  const mayStart = () => budget > 0 && !options.signal?.aborted && now().getTime() < deadline;
  const [cursors, headRows] = await readBatch(db, [
    {
      sql: "SELECT (SELECT coalesce(max(id), 0) FROM events) AS max_event, (SELECT min(last_event_id) FROM webhooks) AS min_cursor",
      args: [],
    },
    headsStatement(first.toISOString(), null, HEAD_LIMIT),
  ]);
  const maxEvent = Number(cursors!.rows[0]!.max_event);
  const minCursor = cursors!.rows[0]!.min_cursor;
  let heads = headRows!.rows.map((r) => toHead(r as Record<string, unknown>));
  if (minCursor !== null && Number(minCursor) < maxEvent) {
    report.queued = await fanOut(db, maxEvent, first.toISOString());
    if (report.queued > 0) {
      const [again] = await readBatch(db, [headsStatement(now().toISOString(), null, HEAD_LIMIT)]);
      heads = again!.rows.map((r) => toHead(r as Record<string, unknown>));
    }
  }

  const chain = async (start: Claimed): Promise<void> => {
    let head: Claimed | undefined = start;
    while (head) {
      const result = await attempt(head, config, now(), fetchFn);
      report.attempted += 1;
      const outcome = await record(db, head, result, config, now(), random);
      report[outcome] += 1;
      head = undefined;
      if (outcome === "retried" || !mayStart()) break;
      // The next event of this subscription, if already due.
      const at = now();
      const [rows] = await readBatch(db, [headsStatement(at.toISOString(), start.webhookId, 1)]);
      const next = rows!.rows.map((r) => toHead(r as Record<string, unknown>));
      budget -= next.length;
      [head] = await claim(db, next, at, leaseMs);
    }
  };

  // More than HEAD_LIMIT subscriptions due: take the next batch of heads until none is left (or time is up).
  while (heads.length > 0 && mayStart()) {
    const batch = heads.slice(0, budget);
    budget -= batch.length;
    const claimed = await claim(db, batch, now(), leaseMs);
    await Promise.all(claimed.map(chain));
    if (heads.length < HEAD_LIMIT || !mayStart()) break;
    const [more] = await readBatch(db, [headsStatement(now().toISOString(), null, HEAD_LIMIT)]);
    heads = more!.rows.map((r) => toHead(r as Record<string, unknown>));
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
            this.log(`webhook dispatch failed: ${error instanceof Error ? error.message : String(error)}`);
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

/**
 * App middleware (AppDeps.middleware) that calls `onWrite(c)` after every
 * successful write (POST/PUT/PATCH/DELETE answered 2xx), e.g. to nudge the
 * dispatcher so that deliveries start right after the event was committed.
 */
export function afterWrites(onWrite: (c: Context<AppEnv>) => void): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    await next();
    const method = c.req.method;
    if ((method === "POST" || method === "PUT" || method === "PATCH" || method === "DELETE") && c.res.status >= 200 && c.res.status < 300) {
      onWrite(c);
    }
  };
}
