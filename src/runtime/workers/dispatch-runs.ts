/** Webhook dispatch runs on Workers, each in its invocation's waitUntil and within its connections (docs/webhooks.md#when-deliveries-run). */
import type { AppConfig } from "../../config";
import type { Database } from "../../db/client";
import { type Logger, loggableError } from "../../logger";
import { readBacklogs } from "../../services/webhooks/backlog";
import { dispatchDue, Nudges, SendSlots } from "../../services/webhooks/dispatch";
import type { SubscribedTypes } from "../../services/webhooks/interest";
import { WebhookSignals } from "../../telemetry/webhooks";
import { workerWebhookFetch } from "./webhook-fetch";

/**
 * An invocation has at most six connections waiting for response headers (https://developers.cloudflare.com/workers/platform/limits/#simultaneous-open-connections):
 * a dispatch run holds at most four for its attempts and two for its database round trips.
 */
export const DISPATCH_CONNECTIONS = { sends: 4, database: 2 } as const;

/** The dispatch of an isolate: runs `dispatchDue` on the asking invocation's `db`, round trips bounded by `withRoundTrips`; outcome logged, never thrown. */
export function isolateDispatch(
  config: AppConfig,
  interest: SubscribedTypes,
  logger: Logger,
  withRoundTrips: (db: Database, n: number) => Database,
): (db: Database) => Promise<void> {
  const fetch = workerWebhookFetch({ egress: config.webhooks.egress, allowPrivate: config.webhooks.allowPrivateTargets });
  // The isolate's newest run, if it has send slots free (plain data): a write wakes it instead of starting a run that would contend with it.
  let open: { slots: SendSlots; nudges: Nudges } | undefined;
  return async (db) => {
    if (open && open.slots.free() > 0) return open.nudges.wake();
    const bounded = withRoundTrips(db, DISPATCH_CONNECTIONS.database);
    // Each run its own slots: an invocation's connections are its own, and a send's timeout starts when its slot is free.
    const slots = new SendSlots(Math.min(DISPATCH_CONNECTIONS.sends, config.webhooks.concurrency));
    const run = { slots, nudges: new Nudges() };
    // A run whose slots its sends fill (receivers that hang) leaves the next writes to this one.
    if (!open || open.slots.free() === 0) open = run;
    try {
      const report = await dispatchDue(bounded, { config, interest, now: () => new Date(), fetch, slots, wake: run.nudges.wait });
      if (report.attempted === 0) return;
      const signals = new WebhookSignals();
      signals.record(report.subscriptions);
      // What the run did, per subscription too (attempts, backlog, oldest age): fields Workers Logs can query (docs/operations.md#metrics).
      const subscriptions = signals.signals(await readBacklogs(bounded, Date.now(), Object.keys(report.subscriptions).map(Number)));
      const { attempted, delivered, retried, givenUp } = report;
      logger.log("info", "webhook dispatch", { attempted, delivered, retried, givenUp, subscriptions });
    } catch (error) {
      logger.log("error", "webhook dispatch failed", { error: loggableError(error).message });
    } finally {
      if (open === run) open = undefined;
      run.nudges.wake();
    }
  };
}
