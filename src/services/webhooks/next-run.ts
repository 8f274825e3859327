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

/** When the next run should start (ISO 8601), or null when nothing waits: the earliest due time of a subscription no run holds. @throws the driver's error. */
export async function nextRunAt(db: Database): Promise<string | null> {
  const [row] = await execute(db, earliest, {});
  return row?.dueAt ?? null;
}
