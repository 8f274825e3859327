/**
 * Delivery attempts (docs/webhooks.md#design): claim due queue heads, POST each signed Event without following redirects, and
 * record the outcome while the claim holds: delivered (2xx), retried after the backoff, or given up after `maxAttempts`.
 */
import { and, eq, lte, sql } from "drizzle-orm";
import type { AppConfig } from "../../config";
import { qb, type Database } from "../../db/client";
import { params, plan, type PlanRun, runEach, withValues } from "../../db/plan";
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

/** An attempt's outcome, recorded on delivery `id` of subscription `webhookId`, if this run's claim (`attempts`) holds. */
type Recorded = { id: number; webhookId: number; attempts: number; statusCode: number | null; error: DeliveryError | null };

const claimP = params<{ id: number; leaseEnd: string; now: string }>();
const deliveredP = params<Pick<Recorded, "id" | "webhookId" | "statusCode"> & { now: string }>();
const givenUpP = params<Recorded & { now: string }>();
const retriedP = params<Omit<Recorded, "webhookId"> & { next: string }>();
/** Counts the attempt and leases the delivery until `leaseEnd`, if still pending and due at `now`. */
const claiming = plan({
  claim: claimP.statement(
    qb
      .update(d)
      .set({ attempts: sql`${d.attempts} + 1`, nextAttemptAt: sql`${claimP("leaseEnd")}`, lastAttemptAt: sql`${claimP("now")}` })
      .where(and(eq(d.id, claimP("id")), eq(d.status, "pending"), lte(d.nextAttemptAt, claimP("now"))))
      .returning({ id: d.id, attempts: d.attempts }),
  ),
});

/** A 2xx answer: the delivery is done at `now`, and its subscription healthy again. */
const delivered = plan({
  delivery: deliveredP.statement(
    qb
      .update(d)
      .set({
        status: "delivered",
        deliveredAt: sql`${deliveredP("now")}`,
        nextAttemptAt: sql`${deliveredP("now")}`,
        lastStatusCode: sql`${deliveredP("statusCode")}`,
        lastError: null,
      })
      .where(and(eq(d.id, deliveredP("id")), eq(d.status, "pending"))),
  ),
  subscription: deliveredP.statement(
    qb
      .update(webhooks)
      .set({ status: "active" })
      .where(and(eq(webhooks.id, deliveredP("webhookId")), eq(webhooks.status, "failing"))),
  ),
});

/** The last attempt failed: the delivery is given up at `now` if this run's claim (`attempts`) holds, and then its subscription is `failing`. */
const givenUp = plan({
  delivery: givenUpP.statement(
    qb
      .update(d)
      .set({
        status: "failed",
        nextAttemptAt: sql`${givenUpP("now")}`,
        lastStatusCode: sql`${givenUpP("statusCode")}`,
        lastError: sql`${givenUpP("error")}`,
      })
      .where(and(eq(d.id, givenUpP("id")), eq(d.status, "pending"), eq(d.attempts, givenUpP("attempts")))),
  ),
  subscription: givenUpP.guarded((changed) =>
    qb
      .update(webhooks)
      .set({ status: "failing" })
      .where(and(eq(webhooks.id, givenUpP("webhookId")), changed)),
  ),
});

/** A failed attempt with attempts left: the next is due at `next`, if this run's claim (`attempts`) holds. */
const retried = plan({
  delivery: retriedP.statement(
    qb
      .update(d)
      .set({
        nextAttemptAt: sql`${retriedP("next")}`,
        lastStatusCode: sql`${retriedP("statusCode")}`,
        lastError: sql`${retriedP("error")}`,
      })
      .where(and(eq(d.id, retriedP("id")), eq(d.status, "pending"), eq(d.attempts, retriedP("attempts")))),
  ),
});

/** Claim `heads` at `now` in one write batch; resolves with those this run won, with their attempt number. */
export async function claim(db: Database, heads: Head[], options: { now: Date; timeoutMs: number }): Promise<Claimed[]> {
  if (heads.length === 0) return [];
  const values = { now: options.now.toISOString(), leaseEnd: leaseEnd(options.now, options.timeoutMs).toISOString() };
  const results = await runEach(
    db,
    heads.map((head) => withValues(claiming, { ...values, id: head.id })),
  );
  const won = new Map(results.flatMap(({ claim: rows }) => rows.map((row) => [row.id, row.attempts] as const)));
  return heads.flatMap((head) => {
    const attempts = won.get(head.id);
    return attempts === undefined ? [] : [{ ...head, attempts }];
  });
}

const DNS_CODES = new Set(["ENOTFOUND", "EAI_AGAIN", "EAI_NODATA", "EAI_FAIL", "EAI_NONAME"]);
const TIMEOUT_CODES = new Set(["ETIMEDOUT", "UND_ERR_CONNECT_TIMEOUT", "UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"]);

/** The `DeliveryError` of a failed `fetch`: from the codes of its `cause` chain (Node, undici), else from its message's words (workerd). */
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
  // IP literals are checked here; names by the runtime's fetch (docs/webhooks.md#targets).
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

/** The plan run that records `result` for `head` at `now`, and what becomes of the delivery. */
function recording(head: Claimed, result: AttemptResult, options: { config: AppConfig; now: Date; random: () => number }): { outcome: Outcome; run: PlanRun } {
  const now = options.now.toISOString();
  const { statusCode, error } = result;
  const { id, webhookId, attempts } = head;
  if (result.ok) return { outcome: "delivered", run: withValues(delivered, { id, webhookId, statusCode, now }) };
  const { maxAttempts, retryBaseMs, retryCapMs } = options.config.webhooks;
  if (attempts >= maxAttempts) return { outcome: "givenUp", run: withValues(givenUp, { id, webhookId, attempts, statusCode, error, now }) };
  const next = new Date(options.now.getTime() + backoffDelayMs(attempts, retryBaseMs, retryCapMs, options.random)).toISOString();
  return { outcome: "retried", run: withValues(retried, { id, attempts, statusCode, error, next }) };
}

/** Send every claimed head at once, then record all outcomes in one write batch; resolves with each attempt's outcome. */
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
