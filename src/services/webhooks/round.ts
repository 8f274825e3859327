/** One dispatch round (docs/webhooks.md#design): lease the state, start the due chains, record what finished with the release; the rest record themselves. */
import type { Database } from "../../db/client";
import { execute, plan, read, readEach, runEach, statement, type PlanRun, withValues } from "../../db/plan";
import { storedInterest, wants } from "../../domain/webhooks";
import { forgetSubscriptions } from "../../telemetry/webhooks";
import {
  CHAIN,
  type ChainOptions,
  eventMessage,
  type Ledger,
  type Link,
  type Planned,
  redeliveryMessage,
  ROUND_MS,
  type RoundReport,
  sendChain,
  type Sent,
  settle,
} from "./chain";
import {
  claim,
  dueRedeliveries,
  eventSpan,
  finish,
  finishedAfter,
  isDue,
  isLeased,
  needsCheck,
  parking,
  parseQueue,
  type QueueEntry,
  queueNow,
  queuePatch,
  release,
  subscriptions,
} from "./dispatch-state";
import { dropRedelivery } from "./outcomes";

/** Events a round takes past the dispatch state's event id. */
const NEW_EVENTS = 100;
/** Events a round reads after a queued subscription's place. */
const WINDOW = 100;
/** Lease beyond a round's last send and its timeout, ms: a round that outlives it may be run again (at least once). */
const LEASE_MARGIN_MS = 30_000;
/** How long a round waits for its chains before it records what finished, ms (default). */
export const ROUND_WAIT_MS = 200;

/** What a round needs. */
export interface RoundOptions extends Omit<ChainOptions, "began" | "quota"> {
  /** The newest event id when the run looked. */
  newest: number;
  /** The last round ended without its release: skip what it recorded. */
  recovering: boolean;
  /** Most attempts this round may make. */
  budget: number;
  /** How long the round waits for its chains before recording, ms. */
  waitMs: number;
  /** Most chains the round may start; the others (a random choice) keep their place for a later round. */
  slots: number;
}

/** What a round did, and the chains it left out: each resolves with what it recorded when it ends. */
export interface RoundResult {
  /** False when another round held the dispatch state. */
  claimed: boolean;
  report: RoundReport;
  outstanding: Promise<RoundReport>[];
}

/** What a round reads in one snapshot, beside the windows of its queued subscriptions. */
const roundReads = plan({ state: statement(queueNow), fresh: statement(eventSpan), subscriptions: statement(subscriptions) });
const releasing = plan({ release });
const finishing = plan({ finish });

const emptyReport = (): RoundReport => ({ progress: false, attempted: 0, delivered: 0, retried: 0, givenUp: 0, subscriptions: {} });

/** Run one round: what it did, and the chains still out. @throws the driver's error (attempt failures are recorded, not thrown). */
export async function runRound(db: Database, options: RoundOptions): Promise<RoundResult> {
  const report = emptyReport();
  const began = options.now();
  const nowIso = began.toISOString();
  const token = crypto.randomUUID();
  const until = new Date(began.getTime() + ROUND_MS + options.config.webhooks.timeoutMs + LEASE_MARGIN_MS).toISOString();
  const [state] = await execute(db, claim, { token, until, now: nowIso });
  if (!state) return { claimed: false, report, outstanding: [] };
  const from = state.eventId;
  const upTo = Math.max(from, Math.min(options.newest, from + NEW_EVENTS));
  // The queue and the subscriptions in one snapshot, so a resume is seen in both or in neither.
  const snapshot = await read(db, roundReads, { from, upTo, limit: NEW_EVENTS, now: nowIso });
  const { fresh, subscriptions: subs } = snapshot;
  const queue = parseQueue(snapshot.state[0]?.queue);
  const free = subs.filter((s) => !isLeased(queue[String(s.id)], nowIso));
  const due = free.filter((s) => s.enabled && queue[String(s.id)] && isDue(queue[String(s.id)]!, nowIso));
  const windowOf = await readEach(db, eventSpan, due, (s) => ({ from: queue[String(s.id)]!.after, upTo, limit: WINDOW }));
  const asked = free.filter((s) => s.enabled && s.redeliveryDue);
  const redeliveriesOf = await readEach(db, dueRedeliveries, asked, (s) => ({ webhookId: s.id, now: nowIso, limit: CHAIN }));
  // What the log holds after each place (after a round that ended without its release, or `verify`).
  const checked = options.recovering ? free : free.filter((s) => needsCheck(queue[String(s.id)], nowIso));
  const finished = await readEach(db, finishedAfter, checked, (s) => ({
    webhookId: s.id,
    after: queue[String(s.id)]?.after ?? from,
    unordered: s.ordering === "none",
  }));

  const ledger: Ledger = { writes: [], delta: {}, report };
  const known = new Set(subs.map((s) => s.id));
  const gone = Object.keys(queue).filter((id) => !known.has(Number(id)));
  for (const id of gone) ledger.delta[id] = null;
  forgetSubscriptions(gone.map(Number));
  const planned: Planned[] = [];
  for (const s of free) {
    const queued = queue[String(s.id)];
    const interest = storedInterest({ ...s, start: s.lastEventId });
    if (!s.enabled) {
      if (queued) ledger.writes.push(park(s.id, queued.after, { [s.id]: null }, {}));
      else if (s.pausedAfter === null && fresh.some((e) => wants(interest, e))) ledger.writes.push(park(s.id, from, {}, { [s.id]: { after: from } }));
      continue;
    }
    const window = queued ? windowOf.get(s) : fresh;
    const done = new Set(finished.get(s)?.map((row) => row.eventId));
    const chain: Link[] = [];
    for (const x of redeliveriesOf.get(s) ?? []) {
      const message = redeliveryMessage(x);
      if (message) chain.push({ message, redelivery: x });
      else ledger.writes.push(withValues(dropRedelivery, { id: x.id }));
    }
    for (const e of window ?? []) if (wants(interest, e) && !done.has(e.id)) chain.push({ message: eventMessage(e), event: e });
    const scanned = queued && window ? (window.length < WINDOW ? upTo : window.at(-1)!.id) : undefined;
    if (chain.length > 0 || (queued && window)) planned.push({ s, queued, chain, scanned });
  }

  const chainOptions: ChainOptions = { ...options, began: began.getTime(), quota: { left: options.budget } };
  // At most `slots` chains start (a random choice when more are planned); the others keep their place.
  const starting = planned.length > options.slots ? shuffled(planned, options.random) : planned;
  for (const p of starting.slice(options.slots)) settle(p, [], upTo, ledger, options);
  const flights = starting.slice(0, options.slots).map((p) => {
    const flight: { p: Planned; sent?: Sent[]; promise: Promise<Sent[]> } = { p, promise: Promise.resolve([]) };
    flight.promise = sendChain(p.s, p.chain, p.queued?.attempts ?? 0, chainOptions).then((sent) => (flight.sent = sent));
    return flight;
  });
  await waitFor(
    flights.map((f) => f.promise),
    options.waitMs,
  );
  const out: typeof flights = [];
  for (const f of flights) {
    if (f.sent) settle(f.p, f.sent, upTo, ledger, options);
    else {
      out.push(f);
      ledger.delta[f.p.s.id] = { ...(f.p.queued ?? { after: from }), lease: until, token };
    }
  }
  const writes = [...ledger.writes, withValues(releasing, { token, eventId: upTo, delta: queuePatch(ledger.delta) })];
  await runEach(db, writes);
  report.progress = report.attempted > 0 || upTo > from || Object.keys(ledger.delta).length > 0 || writes.length > 1;
  const outstanding = out.map((f) => f.promise.then(async (sent) => record(db, f.p, sent, { upTo, token, options })));
  return { claimed: true, report, outstanding };
}

/** A copy of `items` in random order (Fisher–Yates, with `random` in [0, 1)). */
function shuffled<T>(items: readonly T[], random: () => number): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy;
}

/** Resolves when every one of `promises` has, or after `ms`. */
function waitFor(promises: Promise<unknown>[], ms: number): Promise<void> {
  if (promises.length === 0) return Promise.resolve();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  return Promise.race([Promise.all(promises).then(() => {}), late]).finally(() => clearTimeout(timer));
}

/** Record a chain that outlived its round: its outcomes, and its entry (held by `token`) set to its next place, or removed if `finish` finds it caught up. */
async function record(db: Database, p: Planned, sent: Sent[], at: { upTo: number; token: string; options: RoundOptions }): Promise<RoundReport> {
  const ledger: Ledger = { writes: [], delta: {}, report: emptyReport() };
  settle(p, sent, at.upTo, ledger, at.options);
  const id = String(p.s.id);
  const next = (id in ledger.delta ? ledger.delta[id] : p.queued) ?? { after: p.scanned ?? at.upTo };
  const entry: QueueEntry = { after: next.after, attempts: next.attempts, due: next.due };
  const caughtUp = entry.after >= at.upTo && entry.attempts === undefined && entry.due === undefined;
  const values = { id, token: at.token, patch: queuePatch({ [id]: entry }), removal: caughtUp ? queuePatch({ [id]: null }) : null, upTo: at.upTo };
  const writes: PlanRun[] = [...ledger.writes, withValues(finishing, values)];
  await runEach(db, writes);
  ledger.report.progress = true;
  return ledger.report;
}

/** The writes that park paused subscription `id` at `after`, and the queue patch if it was parked (`parked`) or resumed meanwhile (`kept`). */
function park(id: number, after: number, parked: Record<string, QueueEntry | null>, kept: Record<string, QueueEntry>): PlanRun {
  return withValues(parking, { id, after, parked: queuePatch(parked), kept: queuePatch(kept) });
}
