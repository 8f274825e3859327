/**
 * One delivery attempt (docs/api.md#events-and-webhooks): claim a due queue head (a conditional
 * UPDATE that counts the attempt and leases the delivery), POST the signed
 * Event (./signing.ts) without following redirects, and record the outcome
 * while the claim holds. 2xx = delivered (a `failing` subscription becomes
 * `active`); otherwise retried after the backoff (./schedule.ts), or given up
 * after `maxAttempts` (the subscription becomes `failing`). Why claims and
 * leases: docs/webhooks.md, "Design".
 */
import { and, eq, lte, sql } from "drizzle-orm";
import type { AppConfig } from "../../config";
import { qb, type Database } from "../../db/client";
import { guarded, plan, runEach, statement, type Plan, type Steps } from "../../db/plan";
import { webhookDeliveries, webhooks } from "../../db/schema";
import type { DeliveryError } from "../../domain/webhooks";
import { isPrivateHost } from "../../domain/private-address";
import { backoffDelayMs } from "../../domain/backoff";
import { leaseEnd } from "./schedule";
import { signedWebhookHeaders, webhookMessageId } from "./signing";

/** `fetch` as deliveries use it (the runtime's; injectable for tests). */
export type FetchFn = (input: string, init: RequestInit) => Promise<Response>;

/** A subscription's queue head: its pending delivery with the lowest event id, and what to send. */
export interface Head {
  id: number;
  webhookId: number;
  eventId: number;
  url: string;
  secret: string;
  /** The Event JSON, exactly as GET /events shows it. */
  body: string;
}

/** A head this run claimed: `attempts` counts this attempt. */
export interface Claimed extends Head {
  attempts: number;
}

/** What became of a delivery after an attempt. */
export type Outcome = "delivered" | "retried" | "givenUp";

interface AttemptResult {
  ok: boolean;
  statusCode: number | null;
  error: DeliveryError | null;
}

const d = webhookDeliveries;

/** Counts the attempt and leases the delivery until `leaseEnd`, if still pending and due at `now`. */
const claiming = plan({
  claim: statement(
    qb
      .update(d)
      .set({ attempts: sql`${d.attempts} + 1`, nextAttemptAt: sql`${sql.placeholder("leaseEnd")}`, lastAttemptAt: sql`${sql.placeholder("now")}` })
      .where(and(eq(d.id, sql.placeholder("id")), eq(d.status, "pending"), lte(d.nextAttemptAt, sql.placeholder("now"))))
      .returning({ id: d.id, attempts: d.attempts })
      .prepare(),
  ),
});

/** A 2xx answer: the delivery is done at `now`, and its subscription healthy again. */
const delivered = plan({
  delivery: statement(
    qb
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
  ),
  subscription: statement(
    qb
      .update(webhooks)
      .set({ status: "active" })
      .where(and(eq(webhooks.id, sql.placeholder("webhookId")), eq(webhooks.status, "failing")))
      .prepare(),
  ),
});

/** The last attempt failed: the delivery is given up at `now` if this run's claim (`attempts`) holds, and then its subscription is `failing`. */
const givenUp = plan({
  delivery: statement(
    qb
      .update(d)
      .set({
        status: "failed",
        nextAttemptAt: sql`${sql.placeholder("now")}`,
        lastStatusCode: sql`${sql.placeholder("statusCode")}`,
        lastError: sql`${sql.placeholder("error")}`,
      })
      .where(and(eq(d.id, sql.placeholder("id")), eq(d.status, "pending"), eq(d.attempts, sql.placeholder("attempts"))))
      .prepare(),
  ),
  subscription: guarded((changed) =>
    qb
      .update(webhooks)
      .set({ status: "failing" })
      .where(and(eq(webhooks.id, sql.placeholder("webhookId")), changed))
      .prepare(),
  ).after("delivery"),
});

/** A failed attempt with attempts left: the next is due at `next`, if this run's claim (`attempts`) holds. */
const retried = plan({
  delivery: statement(
    qb
      .update(d)
      .set({
        nextAttemptAt: sql`${sql.placeholder("next")}`,
        lastStatusCode: sql`${sql.placeholder("statusCode")}`,
        lastError: sql`${sql.placeholder("error")}`,
      })
      .where(and(eq(d.id, sql.placeholder("id")), eq(d.status, "pending"), eq(d.attempts, sql.placeholder("attempts"))))
      .prepare(),
  ),
});

/**
 * Claim `heads` at `now` in one write batch.
 * @returns the heads this run won, with their attempt number (others were claimed elsewhere or are no longer due).
 */
export async function claim(db: Database, heads: Head[], options: { now: Date; timeoutMs: number }): Promise<Claimed[]> {
  if (heads.length === 0) return [];
  const values = { now: options.now.toISOString(), leaseEnd: leaseEnd(options.now, options.timeoutMs).toISOString() };
  const results = await runEach(
    db,
    heads.map((head) => [claiming, { ...values, id: head.id }] as const),
  );
  const won = new Map(results.flatMap(({ claim: rows }) => rows.map((row) => [row.id, row.attempts] as const)));
  return heads.flatMap((head) => {
    const attempts = won.get(head.id);
    return attempts === undefined ? [] : [{ ...head, attempts }];
  });
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

/** Send one signed attempt of `head` at `at` with `fetchFn`. Never throws. */
export async function attempt(head: Claimed, options: { config: AppConfig; at: Date; fetch: FetchFn }): Promise<AttemptResult> {
  const { webhooks: settings } = options.config;
  // IP literals are never looked up: checked here (names by the runtime's fetch: src/runtime/node/webhook-fetch.ts, worker-webhook-fetch.ts).
  if (!settings.allowPrivateTargets && isPrivateHost(new URL(head.url).hostname)) {
    return { ok: false, statusCode: null, error: "private_address" };
  }
  const headers = signedWebhookHeaders(head.secret, webhookMessageId(head.eventId), options.at, head.body);
  try {
    const res = await options.fetch(head.url, {
      method: "POST",
      headers,
      body: head.body,
      redirect: "manual",
      signal: AbortSignal.timeout(settings.timeoutMs),
    });
    await res.body?.cancel().catch(() => {});
    const ok = res.status >= 200 && res.status < 300;
    return { ok, statusCode: res.status, error: ok ? null : "http_status" };
  } catch (error) {
    return { ok: false, statusCode: null, error: classifyFetchError(error) };
  }
}

/** A plan to run in a batch of several, with its values. */
type PlanRun = readonly [Plan<Steps>, Record<string, unknown>];

/** The plan run that records `result` for `head` at `now`, and what becomes of the delivery. */
function recording(head: Claimed, result: AttemptResult, options: { config: AppConfig; now: Date; random: () => number }): { outcome: Outcome; run: PlanRun } {
  const now = options.now.toISOString();
  const { statusCode, error } = result;
  const claimed = { id: head.id, webhookId: head.webhookId, attempts: head.attempts, statusCode, error };
  if (result.ok) return { outcome: "delivered", run: [delivered, { ...claimed, now }] };
  const { maxAttempts, retryBaseMs, retryCapMs } = options.config.webhooks;
  if (head.attempts >= maxAttempts) return { outcome: "givenUp", run: [givenUp, { ...claimed, now }] };
  const next = new Date(options.now.getTime() + backoffDelayMs(head.attempts, retryBaseMs, retryCapMs, options.random)).toISOString();
  return { outcome: "retried", run: [retried, { ...claimed, next }] };
}

/**
 * Send every claimed head at once, then record all outcomes in one write batch.
 * @returns the outcome of each attempt.
 */
export async function attemptAll(
  db: Database,
  claimed: Claimed[],
  options: { config: AppConfig; now: () => Date; fetch: FetchFn; random: () => number },
): Promise<Outcome[]> {
  const results = await Promise.all(claimed.map(async (head) => ({ head, result: await attempt(head, { ...options, at: options.now() }) })));
  const done = options.now();
  const recorded = results.map(({ head, result }) => recording(head, result, { ...options, now: done }));
  if (recorded.length > 0)
    await runEach(
      db,
      recorded.map((r) => r.run),
    );
  return recorded.map((r) => r.outcome);
}
