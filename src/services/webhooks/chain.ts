/** One subscription's share of a round (docs/webhooks.md#design): its messages (redeliveries, then its stream), sent, and what they leave to record. */
import type { AppConfig } from "../../config";
import { type PlanRun, type ResultOf, withValues } from "../../db/plan";
import { backoffDelayMs } from "../../domain/backoff";
import type { SubscriptionOutcome } from "../../telemetry/webhooks";
import { attempt, type AttemptResult, type FetchFn, type Message, type Target } from "./delivery";
import type { dueRedeliveries, eventSpan, QueueEntry, subscriptions } from "./dispatch-state";
import { type Entry, markSubscription, recordEntry, recordRedelivery, rescheduleRedelivery, retryOnItsOwn } from "./outcomes";
import { signingSecrets } from "./secrets";
import { webhookMessageId } from "./signing";

/** Most messages a round sends to one subscription, one after another. */
export const CHAIN = 20;
/** No send starts later than this after a round began, ms. */
export const ROUND_MS = 5_000;

export type Subscription = ResultOf<typeof subscriptions>[number];
export type EventRow = ResultOf<typeof eventSpan>[number];
export type Redelivery = ResultOf<typeof dueRedeliveries>[number];

/** A message of a subscription's chain: its place in the ordered stream (`event`), or a redelivery. */
export type Link = { message: Message; event: EventRow; redelivery?: undefined } | { message: Message; event?: undefined; redelivery: Redelivery };

/** What a round did; `progress` false: nothing was due or the lease was held elsewhere. */
export interface RoundReport {
  progress: boolean;
  attempted: number;
  delivered: number;
  /** Failed attempts that were rescheduled. */
  retried: number;
  /** Deliveries given up after `maxAttempts` (their subscriptions are now `failing`). */
  givenUp: number;
  /** The same by subscription id, with its oldest undelivered event as read (docs/operations.md#metrics). */
  subscriptions: Record<number, SubscriptionOutcome>;
}

/** What sending a chain needs; `stop()` true: no further send starts. */
export interface ChainOptions {
  config: AppConfig;
  now: () => Date;
  fetch: FetchFn;
  random: () => number;
  stop: () => boolean;
  /** When the round began, ms since the epoch. */
  began: number;
  /** Attempts the round may still make (shared by its chains). */
  quota: { left: number };
}

/** The Event JSON, exactly as GET /events shows it. */
export function eventMessage(e: { id: number; type: string; occurredAt: string; data: string; traceparent: string | null }): Message {
  const body = JSON.stringify({ id: e.id, type: e.type, occurredAt: e.occurredAt, data: JSON.parse(e.data) as unknown });
  return { eventId: e.id, eventType: e.type, messageId: webhookMessageId(e.id), body, traceparent: e.traceparent };
}

/** A redelivery's message: its event again, or a `webhook.test` (event 0, `data: {webhookId}`); undefined when retention removed the event. */
export function redeliveryMessage(x: Redelivery): Message | undefined {
  if (x.eventId === 0) {
    const body = JSON.stringify({ id: 0, type: "webhook.test", occurredAt: x.createdAt, data: { webhookId: x.webhookId } });
    return { eventId: 0, eventType: "webhook.test", messageId: `evt_test_${x.id}`, body, traceparent: null };
  }
  if (x.type === null || x.occurredAt === null || x.data === null) return undefined;
  return eventMessage({ id: x.eventId, type: x.type, occurredAt: x.occurredAt, data: x.data, traceparent: x.traceparent });
}

/** One sent link and what came of it. */
export interface Sent {
  link: Link;
  result: AttemptResult;
  at: Date;
}

/** Resolves at `at` (ms since the epoch) of real time or later; at once when it has passed. */
async function until(at: number): Promise<void> {
  while (Date.now() < at) await new Promise((resolve) => setTimeout(resolve, at - Date.now()));
}

/** Most messages of one chain: `CHAIN`, or two waves of an unordered subscription's attempts. */
const chainLimit = (s: Pick<Subscription, "ordering" | "maxInFlight">) => (s.ordering === "none" ? Math.max(CHAIN, 2 * s.maxInFlight) : CHAIN);

/**
 * Send `chain` to `s`, signed by the secrets that sign now: `strict`, one at a time until an attempt fails with attempts left (`prior`: those
 * of its first stream event); `none`, `maxInFlight` at once. None after `stop()`, the quota or `ROUND_MS`; at most `rateLimit` a second.
 * @returns what was sent, in chain order. Never throws.
 */
export async function sendChain(s: Subscription, chain: Link[], prior: number, options: ChainOptions): Promise<Sent[]> {
  const target: Target = { webhookId: s.id, url: s.url, secrets: signingSecrets(s, options.now()) };
  const links = chain.slice(0, chainLimit(s));
  const sent: Sent[] = [];
  const interval = s.rateLimit === null ? 0 : 1000 / s.rateLimit;
  let next = 0;
  let blocked = false;
  let nextStart = Date.now();
  const open = () => !blocked && next < links.length && !options.stop() && options.quota.left > 0 && options.now().getTime() - options.began < ROUND_MS;
  const worker = async () => {
    while (open()) {
      const index = next++;
      const link = links[index]!;
      options.quota.left -= 1;
      const slot = Math.max(nextStart, Date.now());
      nextStart = slot + interval;
      await until(slot);
      const at = options.now();
      const result = await attempt(target, link.message, { config: options.config, at, fetch: options.fetch });
      sent[index] = { link, result, at };
      const attempts = link.redelivery ? link.redelivery.attempts + 1 : index === firstEvent ? prior + 1 : 1;
      if (s.ordering === "strict" && !result.ok && attempts < options.config.webhooks.maxAttempts) blocked = true;
    }
  };
  const firstEvent = links.findIndex((link) => link.event !== undefined);
  const workers = s.ordering === "none" ? Math.min(s.maxInFlight, links.length) : 1;
  await Promise.all(Array.from({ length: workers }, worker));
  if (interval > 0 && sent.length > 0) await until(nextStart);
  return sent.filter((x) => x !== undefined);
}

/** Where a chain's outcomes go: writes, the queue entries to set (null: out of the queue), and the counts. */
export interface Ledger {
  writes: PlanRun[];
  delta: Record<string, QueueEntry | null>;
  report: RoundReport;
}

/** The log entry of one attempt, `attempts` in all, and what it leads to. */
function entryOf(s: Subscription, sent: Sent, attempts: number, options: Pick<ChainOptions, "config" | "now" | "random">) {
  const { result, at, link } = sent;
  const { maxAttempts, retryBaseMs, retryCapMs } = options.config.webhooks;
  const outcome = result.ok ? "delivered" : attempts >= maxAttempts ? "givenUp" : "retried";
  const next = outcome === "retried" ? new Date(at.getTime() + backoffDelayMs(attempts, retryBaseMs, retryCapMs, options.random)).toISOString() : null;
  const entry: Entry = {
    webhookId: s.id,
    status: outcome === "delivered" ? "delivered" : outcome === "givenUp" ? "failed" : "pending",
    eventId: link.message.eventId,
    eventType: link.message.eventType,
    attempts,
    nextAttemptAt: next,
    lastAttemptAt: at.toISOString(),
    lastStatusCode: result.statusCode,
    lastError: result.error,
    finishedAt: outcome === "retried" ? null : options.now().toISOString(),
  };
  return { entry, outcome } as const;
}

/** A chain as a round planned it: the subscription, its queue entry, its messages and how far its window reached. */
export interface Planned {
  s: Subscription;
  /** Its queue entry (undefined: not queued, its stream is the round's new events). */
  queued: QueueEntry | undefined;
  chain: Link[];
  /** How far a queued subscription's window reached (undefined: not due this round, its place stays). */
  scanned: number | undefined;
}

/** Record into `ledger` what was sent of `planned.chain`, and its place: at the first stream event not done, or out once its window reached `upTo`. */
export function settle(planned: Planned, sent: Sent[], upTo: number, ledger: Ledger, options: Pick<ChainOptions, "config" | "now" | "random">): void {
  const { s, queued, chain, scanned } = planned;
  const { writes, delta, report } = ledger;
  let headAttempts = queued?.attempts ?? 0;
  let retry: QueueEntry | undefined;
  const done = new Set<number>();
  report.subscriptions[s.id] ??= { delivered: 0, failed: 0, givenUp: 0 };
  const own = report.subscriptions[s.id]!;
  const count = (outcome: "delivered" | "retried" | "givenUp") => {
    report[outcome] += 1;
    if (outcome === "delivered") own.delivered += 1;
    else own.failed += 1;
    if (outcome === "givenUp") own.givenUp += 1;
  };
  for (const one of sent) {
    report.attempted += 1;
    const { link } = one;
    if (link.redelivery) {
      const attempts = link.redelivery.attempts + 1;
      const { entry, outcome } = entryOf(s, one, attempts, options);
      const { id } = link.redelivery;
      if (outcome === "retried") writes.push(withValues(rescheduleRedelivery, { id, attempts, next: entry.nextAttemptAt! }), recordEntry(entry, true));
      else writes.push(withValues(recordRedelivery, { ...entry, id }));
      if (outcome === "givenUp" && s.ordering === "none" && s.status === "active") writes.push(withValues(markSubscription, { id: s.id, status: "failing" }));
      count(outcome);
      continue;
    }
    const attempts = headAttempts + 1;
    const { entry, outcome } = entryOf(s, one, attempts, options);
    writes.push(recordEntry(entry, headAttempts > 0));
    count(outcome);
    if (outcome === "delivered" && s.status === "failing") writes.push(withValues(markSubscription, { id: s.id, status: "active" }));
    if (outcome === "givenUp" && s.status === "active") writes.push(withValues(markSubscription, { id: s.id, status: "failing" }));
    if (outcome === "retried" && s.ordering === "none") writes.push(retryOnItsOwn(entry, options.now().toISOString()));
    if (outcome === "retried" && s.ordering === "strict") retry = { after: link.event.id - 1, attempts, due: entry.nextAttemptAt! };
    else done.add(link.event.id);
    headAttempts = 0;
  }
  const next = chain.find((link) => link.event && !done.has(link.event.id));
  own.oldest = next?.event?.occurredAt ?? null;
  if (retry) {
    delta[s.id] = retry;
    return;
  }
  // Not reached this round: its place, keeping the failed attempts of a queued head that was not tried again.
  if (next) delta[s.id] = headAttempts > 0 ? { after: next.event!.id - 1, attempts: headAttempts } : { after: next.event!.id - 1 };
  else if (queued && scanned !== undefined) delta[s.id] = scanned >= upTo ? null : { after: scanned };
}
