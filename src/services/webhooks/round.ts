/**
 * One dispatch round (docs/webhooks.md#design): lease the dispatch state, read what is due, send each subscription's messages in event
 * order (redeliveries first), and record the outcomes with the release in one write batch.
 */
import type { AppConfig } from "../../config";
import type { Database } from "../../db/client";
import { execute, plan, read, readEach, runEach, statement, type PlanRun, type ResultOf, withValues } from "../../db/plan";
import { backoffDelayMs } from "../../domain/backoff";
import { storedInterest, wants } from "../../domain/webhooks";
import { attempt, type AttemptResult, type FetchFn, type Message, type Target } from "./delivery";
import { claim, dueRedeliveries, eventSpan, finishedAfter, parking, type Queue, type QueueEntry, queueNow, release, subscriptions } from "./dispatch-state";
import { dropRedelivery, type Entry, markSubscription, recordEntry, recordRedelivery, rescheduleRedelivery } from "./outcomes";
import { webhookMessageId } from "./signing";

/** Events a round takes past the dispatch state's event id. */
const NEW_EVENTS = 100;
/** Events a round reads after a queued subscription's place. */
const WINDOW = 100;
/** Most messages a round sends to one subscription, one after another. */
const CHAIN = 20;
/** Most redeliveries a round sends. */
const REDELIVERIES = 64;
/** No send starts later than this after a round began, ms. */
const ROUND_MS = 5_000;
/** Lease beyond a round's last send and its timeout, ms: a round that outlives it may be run again (at least once). */
const LEASE_MARGIN_MS = 30_000;

/** What a round needs; `stop()` true: no further send starts. */
export interface RoundOptions {
  config: AppConfig;
  now: () => Date;
  fetch: FetchFn;
  random: () => number;
  stop: () => boolean;
  /** The newest event id when the run looked. */
  newest: number;
  /** The last round ended without its release: skip what it recorded. */
  recovering: boolean;
  /** Most attempts this round may make. */
  budget: number;
}

/** What a round did; `progress` false: nothing was due or the lease was held elsewhere. */
export interface RoundReport {
  progress: boolean;
  attempted: number;
  delivered: number;
  retried: number;
  givenUp: number;
}

type Subscription = ResultOf<typeof subscriptions>[number];
type EventRow = ResultOf<typeof eventSpan>[number];
type Redelivery = ResultOf<typeof dueRedeliveries>[number];

/** A message of a subscription's chain: its place in the ordered stream (`event`), or a redelivery. */
type Link = { message: Message; event: EventRow; redelivery?: undefined } | { message: Message; event?: undefined; redelivery: Redelivery };

/** What a round reads in one snapshot, beside the windows of its queued subscriptions. */
const roundReads = plan({
  state: statement(queueNow),
  fresh: statement(eventSpan),
  subscriptions: statement(subscriptions),
  redeliveries: statement(dueRedeliveries),
});
const releasing = plan({ release });

function targetOf(s: Subscription, now: Date): Target {
  const previous = s.previousSecret !== null && s.previousSecretUntil !== null && s.previousSecretUntil > now.toISOString();
  return { url: s.url, secrets: previous ? [s.secret, s.previousSecret!] : [s.secret] };
}

/** The Event JSON, exactly as GET /events shows it. */
function eventMessage(e: { id: number; type: string; occurredAt: string; data: string }): Message {
  const body = JSON.stringify({ id: e.id, type: e.type, occurredAt: e.occurredAt, data: JSON.parse(e.data) as unknown });
  return { eventId: e.id, eventType: e.type, messageId: webhookMessageId(e.id), body };
}

/** A redelivery's message: its event again, or a `webhook.test` (event 0, `data: {webhookId}`). */
function redeliveryMessage(x: Redelivery): Message | undefined {
  if (x.eventId === 0) {
    const body = JSON.stringify({ id: 0, type: "webhook.test", occurredAt: x.createdAt, data: { webhookId: x.webhookId } });
    return { eventId: 0, eventType: "webhook.test", messageId: `evt_test_${x.id}`, body };
  }
  if (x.type === null || x.occurredAt === null || x.data === null) return undefined;
  return eventMessage({ id: x.eventId, type: x.type, occurredAt: x.occurredAt, data: x.data });
}

/** One sent link and what came of it. */
interface Sent {
  link: Link;
  result: AttemptResult;
  at: Date;
}

/**
 * Send `chain` in order until an attempt fails with attempts left, `CHAIN` are sent, `stop()`, or `ROUND_MS` after `began` (ms since the
 * epoch: the lease outlasts the last send); a give-up lets the next one go (`prior`: the failed attempts of the chain's first stream event).
 * Resolves with what was sent.
 */
async function sendChain(chain: Link[], target: Target, prior: number, options: RoundOptions & { began: number; quota: { left: number } }): Promise<Sent[]> {
  const sent: Sent[] = [];
  const { quota } = options;
  let head = true;
  for (const link of chain.slice(0, CHAIN)) {
    if (options.stop() || quota.left <= 0 || options.now().getTime() - options.began >= ROUND_MS) break;
    quota.left -= 1;
    const at = options.now();
    const result = await attempt(target, link.message, { config: options.config, at, fetch: options.fetch });
    sent.push({ link, result, at });
    const attempts = link.redelivery ? link.redelivery.attempts + 1 : head ? prior + 1 : 1;
    if (link.event) head = false;
    if (!result.ok && attempts < options.config.webhooks.maxAttempts) break;
  }
  return sent;
}

/**
 * Run one round. @returns what it did.
 * @throws the driver's error when the database fails (attempt failures are recorded, not thrown).
 */
export async function runRound(db: Database, options: RoundOptions): Promise<RoundReport> {
  const report: RoundReport = { progress: false, attempted: 0, delivered: 0, retried: 0, givenUp: 0 };
  const { config } = options;
  const began = options.now();
  const nowIso = began.toISOString();
  const token = crypto.randomUUID();
  const until = new Date(began.getTime() + ROUND_MS + config.webhooks.timeoutMs + LEASE_MARGIN_MS).toISOString();
  const [state] = await execute(db, claim, { token, until, now: nowIso });
  if (!state) return report;
  const from = state.eventId;
  const upTo = Math.max(from, Math.min(options.newest, from + NEW_EVENTS));
  // The queue and the subscriptions in one snapshot, so a resume is seen in both or in neither.
  const snapshot = await read(db, roundReads, { from, upTo, limit: NEW_EVENTS, now: nowIso, redeliveryLimit: REDELIVERIES });
  const { fresh, subscriptions: subs, redeliveries } = snapshot;
  const queue = JSON.parse(snapshot.state[0]?.queue ?? "{}") as Queue;
  const due = Object.entries(queue).filter(([, entry]) => entry.due === undefined || entry.due <= nowIso);
  const windows = await readEach(
    db,
    due.map(([, entry]) => [eventSpan, { from: entry.after, upTo, limit: WINDOW }] as const),
  );
  const windowOf = new Map(due.map(([id], index) => [Number(id), windows[index]!]));
  const finished = options.recovering ? await finishedSince(db, subs, queue, from) : new Map<number, Set<number>>();

  const writes: PlanRun[] = [];
  const delta: Record<string, QueueEntry | null> = {};
  const quota = { left: options.budget };
  const work: Promise<void>[] = [];
  const known = new Set(subs.map((s) => s.id));
  for (const id of Object.keys(queue)) if (!known.has(Number(id))) delta[id] = null;

  for (const s of subs) {
    const entry = queue[String(s.id)];
    const interest = storedInterest({ ...s, start: s.lastEventId });
    const own = redeliveries.filter((x) => x.webhookId === s.id).sort((a, b) => a.id - b.id);
    if (!s.enabled) {
      if (entry) writes.push(park(s.id, entry.after, { [s.id]: null }, {}));
      else if (s.pausedAfter === null && fresh.some((e) => wants(interest, e))) writes.push(park(s.id, from, {}, { [s.id]: { after: from } }));
      continue;
    }
    const window = entry ? windowOf.get(s.id) : fresh;
    const done = finished.get(s.id);
    const stream = (window ?? []).filter((e) => wants(interest, e) && !done?.has(e.id));
    const chain: Link[] = [];
    for (const x of own) {
      const message = redeliveryMessage(x);
      if (message) chain.push({ message, redelivery: x });
      else writes.push(dropRedelivery(x.id));
    }
    for (const e of stream) chain.push({ message: eventMessage(e), event: e });
    if (chain.length === 0 && !(entry && window)) continue;
    work.push(
      sendChain(chain, targetOf(s, options.now()), entry?.attempts ?? 0, { ...options, began: began.getTime(), quota }).then((sent) => {
        // How far a queued subscription's window reached (undefined: not due this round, its place stays).
        const scanned = entry && window ? (window.length < WINDOW ? upTo : window.at(-1)!.id) : undefined;
        settle(s, entry, sent, chain, scanned, { writes, delta, report, options, upTo });
      }),
    );
  }
  await Promise.all(work);
  writes.push(withValues(releasing, { token, eventId: upTo, delta: JSON.stringify(delta) }));
  await runEach(db, writes);
  report.progress = report.attempted > 0 || upTo > from || Object.keys(delta).length > 0 || writes.length > 1;
  return report;
}

/** The writes that park paused subscription `id` at `after`, and the queue patch if it was parked (`parked`) or resumed meanwhile (`kept`). */
function park(id: number, after: number, parked: Record<string, QueueEntry | null>, kept: Record<string, QueueEntry>): PlanRun {
  return withValues(parking, { id, after, parked: JSON.stringify(parked), kept: JSON.stringify(kept) });
}

/** After a round that ended without its release: the events after each subscription's place whose delivery is recorded. */
async function finishedSince(db: Database, subs: Subscription[], queue: Queue, from: number): Promise<Map<number, Set<number>>> {
  const rows = await readEach(
    db,
    subs.map((s) => [finishedAfter, { webhookId: s.id, after: queue[String(s.id)]?.after ?? from }] as const),
  );
  return new Map(subs.map((s, index) => [s.id, new Set(rows[index]!.map((row) => row.eventId))]));
}

/** Where a round's outcomes go. */
interface Ledger {
  writes: PlanRun[];
  delta: Record<string, QueueEntry | null>;
  report: RoundReport;
  options: RoundOptions;
  upTo: number;
}

/** The log entry of one attempt of `message`, `attempts` in all, and what it leads to at `at`. */
function entryOf(s: Subscription, sent: Sent, attempts: number, ledger: Ledger): { entry: Entry; outcome: "delivered" | "retried" | "givenUp" } {
  const { result, at, link } = sent;
  const { maxAttempts, retryBaseMs, retryCapMs } = ledger.options.config.webhooks;
  const outcome = result.ok ? "delivered" : attempts >= maxAttempts ? "givenUp" : "retried";
  const next = outcome === "retried" ? new Date(at.getTime() + backoffDelayMs(attempts, retryBaseMs, retryCapMs, ledger.options.random)).toISOString() : null;
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
    finishedAt: outcome === "retried" ? null : ledger.options.now().toISOString(),
  };
  return { entry, outcome };
}

/**
 * Record what was sent to subscription `s` of its `chain`, and its place: in the queue at the first stream event not done (with the
 * attempts and due time of a failed one), or out of it once the stream reached `scanned` ≥ the round's end.
 */
function settle(s: Subscription, queued: QueueEntry | undefined, sent: Sent[], chain: Link[], scanned: number | undefined, ledger: Ledger): void {
  const { writes, delta, report } = ledger;
  let headAttempts = queued?.attempts ?? 0;
  let retry: QueueEntry | undefined;
  const done = new Set<number>();
  for (const one of sent) {
    report.attempted += 1;
    const { link } = one;
    if (link.redelivery) {
      const attempts = link.redelivery.attempts + 1;
      const { entry, outcome } = entryOf(s, one, attempts, ledger);
      if (outcome === "retried") writes.push(rescheduleRedelivery(link.redelivery.id, attempts, entry.nextAttemptAt!));
      else writes.push(recordRedelivery(link.redelivery.id, entry));
      report[outcome] += 1;
      continue;
    }
    const attempts = headAttempts + 1;
    const { entry, outcome } = entryOf(s, one, attempts, ledger);
    writes.push(recordEntry(entry, headAttempts > 0));
    report[outcome] += 1;
    if (outcome === "delivered" && s.status === "failing") writes.push(markSubscription(s.id, "active"));
    if (outcome === "givenUp" && s.status === "active") writes.push(markSubscription(s.id, "failing"));
    if (outcome === "retried") retry = { after: link.event.id - 1, attempts, due: entry.nextAttemptAt! };
    else done.add(link.event.id);
    headAttempts = 0;
  }
  if (retry) {
    delta[s.id] = retry;
    return;
  }
  const next = chain.find((link) => link.event && !done.has(link.event.id));
  // Not reached this round: its place, keeping the failed attempts of a queued head that was not tried again.
  if (next) delta[s.id] = headAttempts > 0 ? { after: next.event!.id - 1, attempts: headAttempts } : { after: next.event!.id - 1 };
  else if (queued && scanned !== undefined) delta[s.id] = scanned >= ledger.upTo ? null : { after: scanned };
}
