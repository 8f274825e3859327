/** Webhook dispatch runs on Workers, each in its invocation's waitUntil and within its connections (docs/webhooks.md#when-deliveries-run). */
import pLimit from "p-limit";
import type { AppConfig } from "../../config";
import type { Database } from "../../db/client";
import { type Logger, loggableError } from "../../logger";
import { dispatchDue } from "../../services/webhooks/dispatch";
import type { SubscribedTypes } from "../../services/webhooks/interest";
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
  const guarded = workerWebhookFetch({ egress: config.webhooks.egress, allowPrivate: config.webhooks.allowPrivateTargets });
  const holdWaiter = { taken: false };
  return (db) => {
    const turn = pLimit(DISPATCH_CONNECTIONS.sends);
    const send: typeof guarded = (input, init) => turn(() => guarded(input, init));
    return dispatchDue(withRoundTrips(db, DISPATCH_CONNECTIONS.database), {
      config,
      interest,
      now: () => new Date(),
      fetch: send,
      slots: DISPATCH_CONNECTIONS.sends,
      holdWaiter,
    }).then(
      // What a run did, per subscription too (attempts, backlog, oldest age): fields Workers Logs can query (docs/operations.md#metrics).
      (report) => void (report.attempted > 0 && logger.log("info", "webhook dispatch", { ...report })),
      (error: unknown) => logger.log("error", "webhook dispatch failed", { error: loggableError(error).message }),
    );
  };
}
