/** Webhook dispatch runs (docs/webhooks.md#design): claim due subscriptions up to the free send slots, run their turns; `WebhookDispatcher` runs them. */
import pLimit, { type LimitFunction } from "p-limit";
import type { AppConfig } from "../../config";
import type { Database } from "../../db/client";
import { execute, run } from "../../db/plan";
import { ATTEMPT_OUTCOMES, OUTCOMES } from "../../domain/webhooks";
import { loggableError } from "../../logger";
import { recordDeliveries } from "../../telemetry/metrics";
import { detached, inSpan } from "../../telemetry/spans";
import { addOutcome, type WebhookSignals } from "../../telemetry/webhooks";
import { CHAIN, emptyReport, type SendOptions, type Spread, type TurnReport, WINDOW } from "./chain";
import { type Claimed, claimDue, eventSpan } from "./claims";
import type { FetchFn } from "./delivery";
import type { SubscribedTypes } from "./interest";
import { endExited, fanOut, fanOutRest, probe } from "./frontier";
import { CLAIM_MS, claimEnd, type Holders, holding, leaseHolders } from "./hold";
import { type Range, RANGE_MS, RangeClose } from "./range";
import { playTurn, takeTurn } from "./turn";

/** Events one fan-out takes past the frontier (a strict member sends a whole range in one turn). */
const NEW_EVENTS = CHAIN;

/** Sends a process (`WEBHOOK_CONCURRENCY`) or an invocation may have in flight, and the share its turns hold: strict one, unordered all but one. */
export class SendSlots {
  private readonly limit: LimitFunction;
  /** Slots the running turns hold (each turn holds a claimed subscription). */
  held = 0;
  constructor(readonly size: number) {
    this.limit = pLimit(size);
  }
  /** Run one send when a slot is free. */
  run<T>(send: () => Promise<T>): Promise<T> {
    return this.limit(send);
  }
  /** How many more subscriptions may be claimed now. */
  free(): number {
    return Math.max(0, this.size - this.held);
  }
  /** The sends a turn of `s` may have in flight at once: 1 in strict order, else `maxInFlight` up to all slots but one. */
  share(s: { ordering: string; maxInFlight: number }): number {
    return s.ordering === "none" ? Math.max(1, Math.min(s.maxInFlight, this.size - 1)) : 1;
  }
}

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
  /** When aborted, no further attempt nor claim starts (attempts in flight finish and are recorded). */
  signal?: AbortSignal;
  /** No claim starts later than this after the run began, ms (default 20 000; Workers' waitUntil allows about 30 s). */
  maxRunMs?: number;
  /** Learns which event types the subscriptions want (read at the start of the run). */
  interest?: SubscribedTypes;
  /** A timer's poll: its probe does not ask what the subscriptions want, so an idle poll reads 3 rows. */
  poll?: boolean;
  /** The sends in flight it may use (default: `WEBHOOK_CONCURRENCY` of its own). */
  slots?: SendSlots;
  /** Where each turn's outcomes per subscription are counted. */
  signals?: WebhookSignals;
  /** How long a range of new events waits for its members before those still sending go on under claims of their own, ms (default `RANGE_MS`). */
  rangeMs?: number;
  /** Resolves at the next nudge (a write, a redelivery): a run waiting for its turns looks again at once. */
  wake?: () => Promise<void>;
  /** Called when a claim left the run no free send slot: work it leaves may be another run's to take (Workers: a queued run). */
  full?: () => void;
  /** Sends other invocations make for an unordered turn (Workers: the `WebhookSender` entrypoint). */
  spread?: Spread;
  /** Names this run's claims and knows holders that exited (default: by their leases alone). */
  holders?: Holders;
}

/** What one `dispatchDue` run did. */
export type DispatchReport = TurnReport;

/** A claim (undefined: nothing due): the subscriptions (`token`, from `claimedAt`) and range it holds; `again`: more may be claimable at once. */
type Claim = { rows: Claimed[]; range: Range | undefined; again: boolean; token: string; claimedAt: Date; rangeHeld: boolean } | undefined;

/** End now what holders known to have exited held (`tokens`: the range's, the earliest due claim's): which of the two ended. @throws the driver's error. */
async function endExitedHolders(db: Database, tokens: (string | null)[], holders: Holders, at: string): Promise<{ range: boolean; any: boolean }> {
  const owners = tokens.map((token) => (token === null ? undefined : holders.exited(token)));
  for (const owner of new Set(owners)) if (owner !== undefined) await run(db, endExited, { owner, now: at });
  return { range: owners[0] !== undefined, any: owners.some((owner) => owner !== undefined) };
}

/** Fan out new events unless a live range holds the frontier, and claim due subscriptions, `n` in all; `fanning.whole`: try `fanOut` first. */
async function claimSome(db: Database, n: number, options: DispatchOptions, learning: boolean, fanning: { whole: boolean }): Promise<Claim> {
  const { interest, now } = options;
  const mark = interest?.mark();
  const [state] = await execute(db, probe(learning), {});
  if (mark && state?.types) interest?.learn(mark, [state.types]);
  if (!state) return undefined;
  const claimedAt = now();
  const at = claimedAt.toISOString();
  const until = claimEnd(claimedAt);
  const { holders = leaseHolders } = options;
  const [nextDue, nextHolder = null] = state.next?.split(" ") ?? [];
  const exited = await endExitedHolders(db, [state.holder, nextHolder], holders, at);
  const held = !exited.range && state.leaseUntil !== null && state.leaseUntil > at;
  const fresh = state.newest > state.frontier && !held;
  let range: Range | undefined;
  if (fresh) {
    const [from, upTo, token] = [state.frontier, Math.min(state.newest, state.frontier + NEW_EVENTS), holders.token()];
    const values = { from, upTo, now: at, until, token, n };
    const taken = fanning.whole ? await run(db, fanOut, values) : undefined;
    fanning.whole = taken !== undefined && taken.whole.rowsAffected > 0;
    const { members } = taken && fanning.whole ? taken : await run(db, fanOutRest, values);
    if (members.length > 0) range = { from, upTo, token, claimedAt, members: members.map((s) => ({ ...s, reach: upTo })) };
  }
  // Subscriptions behind the frontier are served beside new events, not after a burst of them.
  const room = n - (range?.members.length ?? 0);
  const token = holders.token();
  const due = exited.any || (nextDue !== undefined && nextDue <= at);
  const rows = room > 0 && due ? await execute(db, claimDue, { now: at, until, token, n: room }) : [];
  const rangeHeld = held && state.newest > state.frontier;
  if (!fresh && rows.length === 0 && !rangeHeld) return undefined;
  const again = (fresh && !range && state.newest > state.frontier + NEW_EVENTS) || (room > 0 && rows.length === room);
  return { rows, range, again, token, claimedAt, rangeHeld };
}

/** Add `done`'s counts to `report`, and count them in the metrics and `signals`. */
function add(report: TurnReport, done: TurnReport, signals: WebhookSignals | undefined): void {
  for (const key of ["attempted", ...OUTCOMES] as const) report[key] += done[key];
  for (const [id, outcome] of Object.entries(done.subscriptions)) report.subscriptions[Number(id)] = addOutcome(report.subscriptions[Number(id)], outcome);
  recordDeliveries(Object.fromEntries(OUTCOMES.map((outcome) => [ATTEMPT_OUTCOMES[outcome].label, done[outcome]])));
  signals?.record(done.subscriptions);
}

/** Run `turn` of claimed `s` within its share of `slots` (the sends it may have in flight), in a span of its own: its counts. */
async function turnInSlots(s: Claimed, slots: SendSlots, turn: (inFlight: number) => Promise<TurnReport>): Promise<TurnReport> {
  const share = slots.share(s);
  slots.held += share;
  try {
    return await inSpan("petstore.webhook.round", { "petstore.webhook.id": s.id }, async (span) => {
      const done = await turn(share);
      span.setAttributes({ "petstore.webhook.attempted": done.attempted, "petstore.webhook.delivered": done.delivered });
      return done;
    });
  } finally {
    slots.held -= share;
  }
}

/** The turns of claim `claim`: each due subscription's, and each member's of its range (recorded by the range's close). */
function turnsOf(db: Database, claim: NonNullable<Claim>, send: SendOptions, slots: SendSlots, rangeMs?: number): Promise<TurnReport>[] {
  const { token, claimedAt, range } = claim;
  const turns = claim.rows.map((s) =>
    turnInSlots(s, slots, (inFlight) => holding(db, { id: s.id, token }, send.now, () => takeTurn(db, s, { ...send, token, claimedAt, inFlight }))),
  );
  if (!range) return turns;
  const held = { ...send, token: range.token, claimedAt: range.claimedAt };
  const closing = new RangeClose(db, range, held, rangeMs);
  const bounds = { from: range.from, upTo: range.upTo, keepPlace: false };
  const window = execute(db, eventSpan, { from: range.from, upTo: range.upTo, limit: WINDOW });
  window.catch(() => undefined); // each member's turn meets the failure
  for (const s of range.members)
    turns.push(
      // A member's row is claimed only if it is still sending at the range's close: then its turn keeps that claim.
      turnInSlots(s, slots, (inFlight) =>
        holding(db, { id: s.id, token: range.token }, send.now, async () => {
          const played = await playTurn(db, s, bounds, { ...held, inFlight }, window);
          await closing.finish(s, played);
          return played.report;
        }),
      ),
    );
  return turns;
}

/** Run the delivery pipeline until nothing is due, the budget is spent or time is up (all zeros when webhooks are disabled). @throws the driver's error. */
export async function dispatchDue(db: Database, options: DispatchOptions): Promise<DispatchReport> {
  const report = emptyReport();
  const { config, now, signal } = options;
  if (!config.webhooks.enabled) return report;
  const slots = options.slots ?? new SendSlots(config.webhooks.concurrency);
  const deadline = now().getTime() + (options.maxRunMs ?? 20_000);
  const stop = () => signal?.aborted === true || now().getTime() >= deadline;
  const send: SendOptions = { ...options, random: options.random ?? Math.random, stop, slot: (f) => slots.run(f), quota: { left: options.budget ?? 2000 } };
  const out = new Set<Promise<void>>();
  const failures: unknown[] = [];
  const start = (turn: Promise<TurnReport>) => {
    const running: Promise<void> = turn
      .then(
        (done) => add(report, done, options.signals),
        (error: unknown) => void failures.push(error),
      )
      .finally(() => out.delete(running));
    out.add(running);
  };
  let learning = options.poll !== true && options.interest?.stale() === true;
  const fanning = { whole: true };
  // New events behind another run's range: look again every 100 ms while it may close (RANGE_MS) or its dead holder's lease end.
  let heldSince: number | undefined;
  const waitForRange = (held: boolean): boolean => {
    heldSince = held ? (heldSince ?? Date.now()) : undefined;
    return heldSince !== undefined && Date.now() - heldSince <= RANGE_MS + CLAIM_MS;
  };
  while (!stop() && send.quota.left > 0 && failures.length === 0) {
    const claim = slots.free() > 0 ? await claimSome(db, slots.free(), options, learning, fanning) : undefined;
    learning = false;
    if (claim) turnsOf(db, claim, send, slots, options.rangeMs).forEach(start);
    if (claim && slots.free() === 0) options.full?.();
    if (claim?.again) continue;
    if (out.size === 0 && slots.free() > 0 && !waitForRange(claim?.rangeHeld === true)) break;
    await Promise.race([...out, delay(out.size === 0 && claim?.rangeHeld ? 100 : 250), ...(options.wake ? [options.wake()] : [])]);
  }
  await Promise.all(out);
  if (failures.length > 0) throw failures[0];
  return report;
}

/** Resolves after `ms`; the timer does not keep the process alive. */
function delay(ms: number): Promise<void> {
  return new Promise((resolve) => (setTimeout(resolve, ms) as { unref?: () => void }).unref?.());
}

/** Nudges a run may wait for: `wait()` resolves at the next `wake()`. */
export class Nudges {
  private readonly waiting: (() => void)[] = [];
  readonly wait = () => new Promise<void>((resolve) => this.waiting.push(resolve));
  readonly wake = () => this.waiting.splice(0).forEach((resolve) => void resolve());
}

export class WebhookDispatcher {
  private running: Promise<void> | undefined;
  private again = false;
  /** Whether the next run is only a timer's poll (no nudge asked for it since). */
  private pollOnly = true;
  private timer: ReturnType<typeof setInterval> | undefined;
  private stopped = false;
  private soon: ReturnType<typeof setTimeout> | undefined;
  private readonly stopping = new AbortController();
  /** The running run's waits for a nudge. */
  private readonly nudges = new Nudges();

  /** @param run one dispatch run (`poll`: only a timer asked for it); its signal aborts when `stop()` is called. */
  constructor(
    private readonly run: (signal: AbortSignal, poll: boolean, wake: () => Promise<void>) => Promise<unknown>,
    private readonly log: (line: string) => void = (line) => console.error(line),
  ) {}

  /** Run now (or once more after the current run); resolves when the runs are done. `poll`: a timer asks. */
  nudge(poll = false): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (!poll) this.pollOnly = false;
    if (this.running) {
      this.again = true;
      this.nudges.wake();
      return this.running;
    }
    this.running = (async () => {
      try {
        do {
          this.again = false;
          const pollOnly = this.pollOnly;
          this.pollOnly = true;
          try {
            // Its own trace, not the request's that nudged it.
            await detached(() => this.run(this.stopping.signal, pollOnly, this.nudges.wait));
          } catch (error) {
            this.log(`webhook dispatch failed: ${loggableError(error).message}`);
          }
        } while (this.again && !this.stopped);
      } finally {
        this.running = undefined;
        this.nudges.wake();
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
export type DispatcherOptions = Omit<DispatchOptions, "now" | "fetch" | "signal" | "poll"> &
  Partial<Pick<DispatchOptions, "now" | "fetch">> & { log?: (line: string) => void };

/** A dispatcher whose runs are `dispatchDue(db, options)`, sharing one set of send slots (`WEBHOOK_CONCURRENCY`). */
export function createWebhookDispatcher(db: Database, options: DispatcherOptions): WebhookDispatcher {
  const { log, now = () => new Date(), fetch: fetchFn = (input, init) => fetch(input, init), ...rest } = options;
  const slots = rest.slots ?? new SendSlots(rest.config.webhooks.concurrency);
  return new WebhookDispatcher((signal, poll, wake) => dispatchDue(db, { ...rest, slots, now, fetch: fetchFn, signal, poll, wake }), log);
}
