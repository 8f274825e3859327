/** What a round records of its attempts (docs/webhooks.md#design) in one write batch: log entries and redeliveries. */
import { and, eq, inArray, type SQL, sql } from "drizzle-orm";
import { qb } from "../../db/client";
import { type Params, params, plan, type PlanRun, withValues } from "../../db/plan";
import { webhookDeliveries, webhookRedeliveries, webhooks } from "../../db/schema";
import { aliasedPlaceholders, placeholders } from "../../db/placeholders";
import { DELIVERY_STATUSES, type DeliveryError } from "../../domain/webhooks";

const d = webhookDeliveries;
const r = webhookRedeliveries;

/** A log entry (a row of the delivery log) as one attempt leaves it. */
export type Entry = Omit<typeof d.$inferSelect, "lastError"> & { lastError: DeliveryError | null };

const entryP = params<Entry>();
/** The columns an attempt sets. */
const ATTEMPT_COLUMNS = ["attempts", "nextAttemptAt", "lastAttemptAt", "lastStatusCode", "lastError", "finishedAt"] as const;
/** The entry's values as a row of its subscription: none when the subscription was deleted meanwhile (its work is dropped). */
const entryRow = qb
  .select({
    webhookId: webhooks.id,
    ...aliasedPlaceholders(entryP, ["status", "eventId", "eventType", ...ATTEMPT_COLUMNS]),
  })
  .from(webhooks)
  .where(eq(webhooks.id, entryP("webhookId")));
/** The attempt columns, set from the entry's values: on an insert that finds the entry, and on a move. */
const ATTEMPT = placeholders(entryP, ATTEMPT_COLUMNS);

/** The entry written (first attempt), or its attempt set on the entry of that status; a pending entry that lost its count gives way to a finished one. */
const writing = plan({
  stale: entryP.statement(
    qb
      .delete(d)
      .where(and(eq(d.webhookId, entryP("webhookId")), eq(d.status, "pending"), eq(d.eventId, entryP("eventId")), sql`${entryP("status")} <> 'pending'`)),
  ),
  entry: entryP.statement(
    qb
      .insert(d)
      .select(entryRow)
      .onConflictDoUpdate({ target: [d.webhookId, d.status, d.eventId], set: ATTEMPT }),
  ),
});

/** A pending entry (failed before) that is now delivered, given up, or failed once more: changed in place. */
const moving = plan({
  entry: entryP.statement(
    qb
      .update(d)
      .set({ ...placeholders(entryP, ["status", "eventType"]), ...ATTEMPT })
      .where(and(eq(d.webhookId, entryP("webhookId")), eq(d.status, "pending"), eq(d.eventId, entryP("eventId")))),
  ),
});

/** A redelivery `id` done: its event's entry replaced by `entry` (one entry per subscription and event), the redelivery gone. */
const redone = params<Entry & { id: number }>();
export const recordRedelivery = plan({
  old: redone.statement(
    qb.delete(d).where(and(eq(d.webhookId, redone("webhookId")), inArray(d.status, [...DELIVERY_STATUSES]), eq(d.eventId, redone("eventId")))),
  ),
  entry: redone.statement(qb.insert(d).select(entryRow)),
  redelivery: redone.statement(qb.delete(r).where(eq(r.id, redone("id")))),
});

/** Redelivery `id` due again at `next` after `attempts` attempts. */
const retryP = params<{ id: number; attempts: number; next: string }>();
export const rescheduleRedelivery = plan({
  redelivery: retryP.statement(
    qb
      .update(r)
      .set({ attempts: sql`${retryP("attempts")}`, nextAttemptAt: sql`${retryP("next")}` })
      .where(eq(r.id, retryP("id"))),
  ),
});

/** What a redelivery is queued with: for subscription `webhookId` (if it exists), event `eventId`, due at `nextAttemptAt`. */
export type QueuedRedelivery = { webhookId: number; eventId: number; attempts: number; nextAttemptAt: string; createdAt: string };

/** The insert of one redelivery with `p`'s values, if subscription `webhookId` exists and `where` holds. */
export function insertRedelivery<V extends QueuedRedelivery>(p: Params<V>, where?: SQL) {
  const columns = { id: sql<null>`NULL`.as("id"), webhookId: webhooks.id, ...aliasedPlaceholders(p, ["eventId", "attempts", "nextAttemptAt", "createdAt"]) };
  return qb.insert(r).select(
    qb
      .select(columns)
      .from(webhooks)
      .where(and(eq(webhooks.id, p("webhookId")), where)),
  );
}

const retryingP = params<QueuedRedelivery>();
const retrying = plan({ redelivery: retryingP.statement(insertRedelivery(retryingP)) });

/** The write that retries the stream event of pending `entry` on its own (ordering `none`) as a redelivery created at `now`. */
export function retryOnItsOwn(entry: Entry, now: string): PlanRun {
  const { webhookId, eventId, attempts, nextAttemptAt } = entry;
  return withValues(retrying, { webhookId, eventId, attempts, nextAttemptAt: nextAttemptAt!, createdAt: now });
}

/** The write that records `entry`: in place when it was pending before (`wasPending`), else as written. */
export function recordEntry(entry: Entry, wasPending: boolean): PlanRun {
  return wasPending ? withValues(moving, entry) : withValues(writing, entry);
}

/** Redelivery `id` dropped: retention removed its event, nothing to send. */
const dropP = params<{ id: number }>();
export const dropRedelivery = plan({ redelivery: dropP.statement(qb.delete(r).where(eq(r.id, dropP("id")))) });
