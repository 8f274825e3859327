/** When the next dispatch run should start (docs/webhooks.md#workers), for a runtime that starts runs at given times. */
import { and, isNotNull, isNull } from "drizzle-orm";
import { qb, type Database } from "../../db/client";
import { execute, params } from "../../db/plan";
import { webhooks } from "../../db/schema";

/** The earliest due time of a subscription no run holds (the due-time index in order, up to the first unclaimed). */
const earliest = params<Record<never, never>>().prepare(
  qb
    .select({ dueAt: webhooks.dueAt })
    .from(webhooks)
    .where(and(isNotNull(webhooks.dueAt), isNull(webhooks.leaseToken)))
    .orderBy(webhooks.dueAt)
    .limit(1),
);

/**
 * When the next run should start, as an ISO 8601 time, or null when nothing waits: the earliest due time of a subscription no run holds
 * (a retry, one left behind). What a live run holds it sends itself, and a run that dies is followed by its runtime (Workers: the watch
 * message, the queue's retry); events no run has fanned out are the writes' to start. @throws the driver's error.
 */
export async function nextRunAt(db: Database): Promise<string | null> {
  const [row] = await execute(db, earliest, {});
  return row?.dueAt ?? null;
}
