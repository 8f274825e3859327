/** Webhook dispatch runs on Workers, in an invocation's waitUntil or a queue consumer, within its connections (docs/webhooks.md#workers). */
import type { AppConfig } from "../../config";
import type { Database } from "../../db/client";
import { type Logger, loggableError } from "../../logger";
import { readBacklogs } from "../../services/webhooks/backlog";
import { type DispatchReport, dispatchDue, Nudges, SendSlots } from "../../services/webhooks/dispatch";
import type { Spread } from "../../services/webhooks/chain";
import type { SubscribedTypes } from "../../services/webhooks/interest";
import { nextRunAt } from "../../services/webhooks/next-run";
import { WebhookSignals } from "../../telemetry/webhooks";
import type { RunTimer } from "./run-queue";
import { configuredWebhookFetch } from "./webhook-fetch";

/** Six connections per invocation (https://developers.cloudflare.com/workers/platform/limits/): a run's four for sends, two for the database. */
export const DISPATCH_CONNECTIONS = { sends: 4, database: 2 } as const;

/** The dispatch of an isolate, each run on the asking invocation's `db` (round trips bounded by `withRoundTrips`). */
export interface IsolateDispatch {
  /** A run in a request's or a cron's waitUntil, a queued message kept ahead of it while it lasts; `census`: its line lists every subscription's backlog. Never throws. */
  inInvocation(db: Database, census?: boolean): Promise<void>;
  /** A run in a queue consumer's invocation. @throws the run's error (logged too), so that the queue retries its message. */
  queued(db: Database): Promise<void>;
}

/** After a run: await `queued`, queue a run at the next due time, log `report` per subscription, the oldest age of each, every backlog in a `census` (docs/operations.md#metrics). @throws the driver's error. */
async function afterRun(db: Database, report: DispatchReport, queued: Promise<void>[], timer: RunTimer, logger: Logger, census: boolean): Promise<void> {
  await Promise.all(queued);
  const next = await nextRunAt(db);
  if (next !== null) await timer.ensure(Date.parse(next), Date.now());
  if (report.attempted === 0 && !census) return;
  const signals = new WebhookSignals();
  signals.record(report.subscriptions);
  const served = Object.keys(report.subscriptions).map(Number);
  const subscriptions = signals.signals(await (census ? readBacklogs(db, Date.now()) : readBacklogs(db, Date.now(), served, "oldest")));
  const { attempted, delivered, retried, givenUp } = report;
  logger.log("info", "webhook dispatch", { attempted, delivered, retried, givenUp, subscriptions });
}

/** The dispatch of an isolate: runs of `dispatchDue`, each followed by a queued message at the next due time (`timer`), each with its `spread`. */
export function isolateDispatch(
  config: AppConfig,
  interest: SubscribedTypes,
  logger: Logger,
  withRoundTrips: (db: Database, n: number) => Database,
  timer: RunTimer,
  spread?: () => Spread,
): IsolateDispatch {
  const fetch = configuredWebhookFetch(config.webhooks);
  // The isolate's newest run, if it has send slots free (plain data): a write wakes it instead of starting a run that would contend with it.
  let open: { slots: SendSlots; nudges: Nudges } | undefined;
  const dispatch = async (db: Database, watched: boolean, census = false): Promise<void> => {
    if (!census && open && open.slots.free() > 0) return open.nudges.wake();
    const bounded = withRoundTrips(db, DISPATCH_CONNECTIONS.database);
    // Each run its own slots: an invocation's connections are its own, and a send's timeout starts when its slot is free.
    const slots = new SendSlots(Math.min(DISPATCH_CONNECTIONS.sends, config.webhooks.concurrency));
    const run = { slots, nudges: new Nudges() };
    // A run whose slots its sends fill (receivers that hang) leaves the next writes to this one.
    if (!open || open.slots.free() === 0) open = run;
    // A run whose slots are full leaves the rest to a queued run in an invocation of its own.
    const queued: Promise<void>[] = [];
    const full = () => void queued.push(timer.soon());
    const work = () => dispatchDue(bounded, { config, interest, now: () => new Date(), fetch, slots, wake: run.nudges.wait, full, spread: spread?.() });
    try {
      await afterRun(bounded, await (watched ? timer.watching(work) : work()), queued, timer, logger, census);
    } finally {
      if (open === run) open = undefined;
      run.nudges.wake();
    }
  };
  const failed = (error: unknown) => logger.log("error", "webhook dispatch failed", { error: loggableError(error).message });
  return {
    inInvocation: (db, census) => dispatch(db, true, census).catch(failed),
    queued: (db) =>
      dispatch(db, false).catch((error: unknown) => {
        failed(error);
        throw error;
      }),
  };
}
