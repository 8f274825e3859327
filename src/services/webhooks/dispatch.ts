/** Webhook dispatch runs (docs/webhooks.md#design): rounds until nothing is due, the budget is spent or time is up; `WebhookDispatcher` runs them. */
import type { AppConfig } from "../../config";
import type { Database } from "../../db/client";
import { execute } from "../../db/plan";
import { loggableError } from "../../logger";
import { recordDeliveries } from "../../telemetry/metrics";
import { detached, inSpan } from "../../telemetry/spans";
import {
  recordSubscriptionOutcomes,
  recordWebhookBacklog,
  type SubscriptionOutcome,
  type SubscriptionSignals,
  subscriptionSignals,
} from "../../telemetry/webhooks";
import type { RoundReport } from "./chain";
import type { FetchFn } from "./delivery";
import { isDue, parseQueue, probe } from "./dispatch-state";
import type { SubscribedTypes } from "./interest";
import { ROUND_WAIT_MS, runRound } from "./round";

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
  /** When aborted, no further attempt nor round starts (attempts in flight finish and are recorded). */
  signal?: AbortSignal;
  /** No attempt nor round starts later than this after the run began, ms (default 20 000; Workers' waitUntil allows about 30 s). */
  maxRunMs?: number;
  /** Learns which event types the subscriptions want (read at the start of the run). */
  interest?: SubscribedTypes;
  /** A timer's poll: its probe does not ask whether any subscription exists, so an idle poll reads 3 rows. */
  poll?: boolean;
  /** How long a round waits for its chains before recording what finished, ms (default 200); a chain still out records itself. */
  waitMs?: number;
  /** Most chains out at once (default: no limit): the run's connections for sends (Workers); a round starts no more than are free. */
  slots?: number;
  /** Shared by the runs of one isolate: at most one of them waits out another round's hold, the others end (default: each may wait). */
  holdWaiter?: HoldWaiter;
}

/** Whether some run of an isolate is waiting out another round's hold of the dispatch state. */
export interface HoldWaiter {
  taken: boolean;
}

/** This run's turn at waiting out holds: `wait()` is true while it has (or gets) the turn, `stop()` gives it back. */
function waitingOutHolds(shared: HoldWaiter | undefined): { wait(): boolean; stop(): void } {
  let mine = false;
  return {
    wait: () => {
      if (!mine && shared?.taken) return false;
      if (shared) shared.taken = true;
      mine = true;
      return true;
    },
    stop: () => {
      if (mine && shared) shared.taken = false;
      mine = false;
    },
  };
}

/** What one `dispatchDue` run did: the counts of its rounds. */
export interface DispatchReport extends Omit<RoundReport, "progress" | "subscriptions"> {
  /** By subscription: this run's attempts, and its backlog and oldest undelivered event as the run left them (Workers' log line). */
  subscriptions?: SubscriptionSignals[];
}

/** Let pending I/O callbacks (e.g. requests on Node, where the embedded database runs on the main thread) run. */
const yieldToEventLoop = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

/** Add `done`'s counts to `report` and `bySubscription`, and record them. */
function add(report: DispatchReport, done: RoundReport, bySubscription: Record<number, SubscriptionOutcome>): void {
  for (const count of ["attempted", "delivered", "retried", "givenUp"] as const) report[count] += done[count];
  for (const [id, { delivered, failed, givenUp }] of Object.entries(done.subscriptions)) {
    const run = bySubscription[Number(id)] ?? { delivered: 0, failed: 0, givenUp: 0 };
    bySubscription[Number(id)] = { delivered: run.delivered + delivered, failed: run.failed + failed, givenUp: run.givenUp + givenUp };
  }
  recordDeliveries(done);
  recordSubscriptionOutcomes(done.subscriptions);
}

/** Run the delivery pipeline once (all zeros when webhooks are disabled). @throws the driver's error (attempt failures are recorded, not thrown). */
export async function dispatchDue(db: Database, options: DispatchOptions): Promise<DispatchReport> {
  const report: DispatchReport = { attempted: 0, delivered: 0, retried: 0, givenUp: 0 };
  const bySubscription: Record<number, SubscriptionOutcome> = {};
  const { config, now, signal } = options;
  if (!config.webhooks.enabled) return report;
  const random = options.random ?? Math.random;
  let budget = options.budget ?? 2000;
  const deadline = now().getTime() + (options.maxRunMs ?? 20_000);
  const stop = () => signal?.aborted === true || now().getTime() >= deadline;

  let learning = options.poll !== true && options.interest?.stale() === true;
  // Chains that outlived their round; the run ends once they have recorded themselves.
  const out = new Set<Promise<unknown>>();
  const failures: unknown[] = [];
  const holds = waitingOutHolds(options.holdWaiter);
  /** Until a chain out records itself, or 250 ms (something else may have become due). */
  const awhile = () => Promise.race([...out, delay(250)]);
  try {
    while (budget > 0 && !stop() && failures.length === 0) {
      const slots = (options.slots ?? Number.POSITIVE_INFINITY) - out.size;
      if (slots <= 0) {
        await awhile();
        continue;
      }
      const at = now().toISOString();
      const mark = options.interest?.mark();
      const [state] = await execute(db, probe(learning), { now: at });
      if (mark && state?.types) options.interest?.learn(mark, [state.types]);
      learning = false;
      if (!state) break;
      const queue = parseQueue(state.queue);
      const due = state.newest > state.eventId || Boolean(state.redeliveries) || Object.values(queue).some((entry) => isDue(entry, at));
      const places = Object.fromEntries(Object.entries(queue).map(([id, entry]) => [id, entry.after]));
      recordWebhookBacklog({ places, eventId: state.eventId, newest: state.newest });
      // Another round holds the state: its run's chains may fill its slots, leaving this run's work undone; wait for its release.
      const held = state.leaseUntil !== null && state.leaseUntil > at;
      if (held || !due) {
        const waiting = held && due && holds.wait();
        if (!waiting) holds.stop();
        if (out.size === 0 && !waiting) break;
        await awhile();
        continue;
      }
      const roundOptions = {
        config,
        now,
        fetch: options.fetch,
        random,
        stop,
        newest: state.newest,
        recovering: state.leaseUntil !== null,
        budget,
        waitMs: options.waitMs ?? ROUND_WAIT_MS,
        slots,
      };
      // A span per round, its sends and round trips inside; an idle poll makes none.
      holds.stop();
      const round = await inSpan("petstore.webhook.round", {}, async (span) => {
        const done = await runRound(db, roundOptions);
        span.setAttributes({ "petstore.webhook.attempted": done.report.attempted, "petstore.webhook.delivered": done.report.delivered });
        return done;
      });
      for (const chain of round.outstanding) {
        const tracked: Promise<unknown> = chain
          .then(
            (done) => add(report, done, bySubscription),
            (error: unknown) => failures.push(error),
          )
          .finally(() => out.delete(tracked));
        out.add(tracked);
      }
      budget -= round.report.attempted;
      add(report, round.report, bySubscription);
      if (round.report.progress) await yieldToEventLoop();
      else if (out.size === 0 && round.claimed) break;
      else await awhile();
    }
  } finally {
    holds.stop();
  }
  await Promise.all(out);
  if (failures.length > 0) throw failures[0];
  const ran = subscriptionSignals(now().getTime(), new Set(Object.keys(bySubscription).map(Number)));
  if (ran.length > 0) report.subscriptions = ran.map((one) => ({ ...one, ...bySubscription[one.id] }));
  return report;
}

/** Resolves after `ms`; the timer does not keep the process alive. */
function delay(ms: number): Promise<void> {
  return new Promise((resolve) => (setTimeout(resolve, ms) as { unref?: () => void }).unref?.());
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
            // Its own trace, not the request's that nudged it.
            await detached(() => this.run(this.stopping.signal, pollOnly));
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
