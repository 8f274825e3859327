/** One subscription's turn of sends (docs/webhooks.md#design): its messages (redeliveries, then its stream), sent, and what they leave to record. */
import type { AppConfig } from "../../config";
import { type PlanRun, type ResultOf, withValues } from "../../db/plan";
import { backoffDelayMs } from "../../domain/backoff";
import { ATTEMPT_OUTCOMES, type AttemptOutcome, outcomeOf, type WebhookStatus } from "../../domain/webhooks";
import type { SubscriptionOutcome } from "../../telemetry/webhooks";
import type { Claimed, dueRedeliveries, eventSpan, Release } from "./claims";
import { attempt, type AttemptResult, type FetchFn, type Message, type Target } from "./delivery";
import { type Entry, recordEntry, recordRedelivery, rescheduleRedelivery, retryOnItsOwn } from "./outcomes";
import { signingSecrets } from "./secrets";
import { webhookMessageId } from "./signing";

/** Events in a range (its members' turns), and redeliveries one turn takes. */
export const CHAIN = 20;
/** Events a turn reads after its subscription's place, and most messages it sends (strict: one after another; `none`: `maxInFlight` at once). */
export const WINDOW = 100;
/** No send of a turn starts later than this after its claim, ms (its holder extends the claim while it sends). */
export const TURN_MS = 4_000;

export type EventRow = ResultOf<typeof eventSpan>[number];
export type Redelivery = ResultOf<typeof dueRedeliveries>[number];

/** A message of a turn: its place in the ordered stream (`event`), or a redelivery. */
export type Link = { message: Message; event: EventRow; redelivery?: undefined } | { message: Message; event?: undefined; redelivery: Redelivery };

/** Attempts by outcome (keys of `ATTEMPT_OUTCOMES`), and by subscription id. */
export type TurnReport = { attempted: number } & Record<AttemptOutcome, number> & {
    subscriptions: Record<number, SubscriptionOutcome>;
  };

/** A report with nothing counted. */
export const emptyReport = (): TurnReport => ({ attempted: 0, delivered: 0, retried: 0, givenUp: 0, subscriptions: {} });

/** What sending needs; `stop()` true: no further send starts; `slot` runs one send within the process's (or invocation's) sends in flight. */
export interface SendOptions {
  config: AppConfig;
  now: () => Date;
  fetch: FetchFn;
  random: () => number;
  stop: () => boolean;
  slot: <T>(send: () => Promise<T>) => Promise<T>;
  /** Attempts the run may still make (shared by its turns). */
  quota: { left: number };
  /** Most sends of this turn at once (default: `maxInFlight`, or 1 in strict order). */
  inFlight?: number;
  /** Sends other invocations make (Workers): an unordered turn wanting more than `inFlight` spreads over them. */
  spread?: Spread;
}

/** Invocations of their own that send (each `slots` at once, all it is given): `send` resolves with what was sent; `calls` left to this run. */
export interface Spread {
  slots: number;
  calls: { left: number };
  send(s: Claimed, links: Link[], inFlight: number): Promise<Sent[]>;
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

/**
 * Send `chain` to `s`, signed by the secrets that sign now: `strict`, one at a time until an attempt fails with attempts left; `none`,
 * `inFlight` (default `maxInFlight`) at once; each send in a `slot`, none after `stop()`, the quota or `deadline` (ms since the epoch); at most `rateLimit` a second.
 * @returns what was sent, in chain order (a gapless prefix, but for the links of a `spread` invocation that failed). Never throws.
 */
export async function sendChain(s: Claimed, chain: Link[], deadline: number, options: SendOptions): Promise<Sent[]> {
  const { spread } = options;
  const wider = s.ordering === "none" && s.rateLimit === null && s.attempts === 0 && s.maxInFlight > (options.inFlight ?? s.maxInFlight);
  if (spread && wider && spread.calls.left > 0 && !options.stop() && options.now().getTime() < deadline) return spreadChain(s, chain, spread, options);
  const target: Target = { webhookId: s.id, url: s.url, secrets: signingSecrets(s, options.now()) };
  const links = chain.slice(0, WINDOW);
  const sent: Sent[] = [];
  const interval = s.rateLimit === null ? 0 : 1000 / s.rateLimit;
  const firstEvent = links.findIndex((link) => link.event !== undefined);
  let next = 0;
  let blocked = false;
  let nextStart = Date.now();
  const open = () => !blocked && next < links.length && !options.stop() && options.quota.left > 0 && options.now().getTime() < deadline;
  const one = async () => {
    if (!open()) return;
    const index = next++;
    const link = links[index]!;
    options.quota.left -= 1;
    const at = options.now();
    const result = await attempt(target, link.message, { config: options.config, at, fetch: options.fetch });
    sent[index] = { link, result, at };
    const attempts = link.redelivery ? link.redelivery.attempts + 1 : index === firstEvent ? s.attempts + 1 : 1;
    if (s.ordering === "strict" && outcomeOf(result.ok, attempts, options.config.webhooks.maxAttempts) === "retried") blocked = true;
  };
  const worker = async () => {
    while (open()) {
      const start = Math.max(nextStart, Date.now());
      nextStart = start + interval;
      await until(start);
      await options.slot(one);
    }
  };
  const workers = s.ordering === "none" ? Math.min(options.inFlight ?? s.maxInFlight, links.length) : 1;
  await Promise.all(Array.from({ length: workers }, worker));
  if (interval > 0 && sent.length > 0) await until(nextStart);
  return sent.filter((x) => x !== undefined);
}

/**
 * Send the head of `chain` to unordered `s` from invocations of `spread`, `maxInFlight` at once in all, each sending all it is given (two
 * rounds of its slots): what they sent (one that fails sent nothing: its links are sent again later, at least once). Never throws.
 */
async function spreadChain(s: Claimed, chain: Link[], spread: Spread, options: SendOptions): Promise<Sent[]> {
  const parts: Promise<Sent[]>[] = [];
  const end = Math.min(chain.length, WINDOW, options.quota.left);
  let at = 0;
  for (let left = s.maxInFlight; left > 0 && at < end && spread.calls.left > 0; left -= spread.slots) {
    const inFlight = Math.min(left, spread.slots);
    const links = chain.slice(at, Math.min(at + 2 * inFlight, end));
    spread.calls.left -= 1;
    parts.push(spread.send(s, links, inFlight).catch(() => []));
    at += links.length;
  }
  options.quota.left -= at;
  return (await Promise.all(parts)).flat();
}

/** What recording attempts needs: the settings, the clock and the jitter source. */
type Clock = Pick<SendOptions, "config" | "now" | "random">;

/** The log entry of one attempt, `attempts` in all, and its outcome (the give-up rule: `outcomeOf`). */
function entryOf(s: Claimed, sent: Sent, attempts: number, options: Clock) {
  const { result, at, link } = sent;
  const { maxAttempts, retryBaseMs, retryCapMs } = options.config.webhooks;
  const outcome = outcomeOf(result.ok, attempts, maxAttempts);
  const next = outcome === "retried" ? new Date(at.getTime() + backoffDelayMs(attempts, retryBaseMs, retryCapMs, options.random)).toISOString() : null;
  const entry: Entry = {
    webhookId: s.id,
    status: ATTEMPT_OUTCOMES[outcome].status,
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

/** A turn as planned: the claimed subscription, its messages, and how far its window of the log reached (its place if the stream was not due). */
export interface Planned {
  s: Claimed;
  chain: Link[];
  scanned: number;
}

/** Record what was sent of `planned.chain`: `{writes, release, report}`, its log entries, the claim's release (next place, head attempts, status, failure times), its counts. */
export function settle(
  planned: Planned,
  sent: Sent[],
  options: Clock,
): { writes: PlanRun[]; release: Omit<Release, "token" | "now" | "disableBefore" | "recheckAt" | "keepPlace" | "member" | "clean">; report: TurnReport } {
  const { s, chain, scanned } = planned;
  const report = emptyReport();
  const own: SubscriptionOutcome = { delivered: 0, failed: 0, givenUp: 0 };
  report.subscriptions[s.id] = own;
  const writes: PlanRun[] = [];
  const state = { head: s.attempts, status: null as WebhookStatus | null, lastOk: null as number | null, failedAt: null as string | null };
  let retry: { place: number; attempts: number; retryAt: string } | undefined;
  const done = new Set<number>();
  for (const one of sent) {
    const { redelivery } = one.link;
    const outcome = redelivery ? settleRedelivery(s, one, redelivery, writes, options) : settleEvent(s, one, state, writes, done, options);
    if (outcome.retry) retry = outcome.retry;
    count(report, own, outcome.outcome);
    if (outcome.outcome === "givenUp" && (s.ordering === "none" || !one.link.redelivery) && s.status === "active") state.status = "failing";
    if (outcome.outcome === "delivered" && !one.link.redelivery && s.status === "failing") state.status = "active";
    state.lastOk = one.result.ok ? 1 : 0;
    state.failedAt = one.result.ok ? null : (state.failedAt ?? one.at.toISOString());
  }
  const next = chain.find((link) => link.event && !done.has(link.event.id));
  // A head that failed before and was not tried again keeps its attempts and retry time.
  const keepHead = !retry && state.head > 0;
  const release = {
    id: s.id,
    place: retry ? retry.place : next ? next.event!.id - 1 : scanned,
    attempts: retry ? retry.attempts : keepHead ? state.head : 0,
    retryAt: retry ? retry.retryAt : keepHead ? s.retryAt : null,
    status: state.status,
    lastOk: state.lastOk,
    failedAt: state.failedAt,
  };
  return { writes, release, report };
}

/** Add a redelivery's writes to `writes` (its entry, and its own retry or its end): its outcome. */
function settleRedelivery(s: Claimed, one: Sent, redelivery: Redelivery, writes: PlanRun[], options: Clock) {
  const attempts = redelivery.attempts + 1;
  const { entry, outcome } = entryOf(s, one, attempts, options);
  const { id } = redelivery;
  if (outcome === "retried") writes.push(withValues(rescheduleRedelivery, { id, attempts, next: entry.nextAttemptAt! }), recordEntry(entry, true));
  else writes.push(withValues(recordRedelivery, { ...entry, id }));
  return { outcome, retry: undefined };
}

/** Add a stream event's writes to `writes` and mark it `done` unless a strict head must be retried (then `retry`): its outcome. */
function settleEvent(s: Claimed, one: Sent, state: { head: number }, writes: PlanRun[], done: Set<number>, options: Clock) {
  const event = one.link.event!;
  const attempts = state.head + 1;
  const { entry, outcome } = entryOf(s, one, attempts, options);
  writes.push(recordEntry(entry, state.head > 0));
  state.head = 0;
  if (outcome === "retried" && s.ordering === "strict") return { outcome, retry: { place: event.id - 1, attempts, retryAt: entry.nextAttemptAt! } };
  if (outcome === "retried") writes.push(retryOnItsOwn(entry, options.now().toISOString()));
  done.add(event.id);
  return { outcome, retry: undefined };
}

/** Count one attempt of `outcome` in `report` and in its subscription's `own` counts. */
function count(report: TurnReport, own: SubscriptionOutcome, outcome: AttemptOutcome): void {
  report.attempted += 1;
  report[outcome] += 1;
  own[outcome === "delivered" ? "delivered" : "failed"] += 1;
  if (outcome === "givenUp") own.givenUp += 1;
}
