/**
 * Fan-out of events into deliveries (API.md §6). Each subscription has a
 * cursor `last_event_id`; one write batch inserts a `webhook_deliveries` row for
 * every (subscription, event) with `last_event_id < event.id <= upTo` whose
 * type it wants, then moves the cursors to `upTo`. Event ids follow commit
 * order, so every wanted event gets exactly one row (`UNIQUE (webhook_id,
 * event_id)` backs this up). A `failing` subscription gets rows only while it
 * has fewer than `maxPending` pending. Batches cover at most
 * `FANOUT_STEP_EVENTS` events; the run yields between them.
 */
import { and, eq, gt, inArray, lt, lte, ne, or, sql } from "drizzle-orm";
import { qb, type Database } from "../../db/client";
import { plan, run, statement } from "../../db/plan";
import { events, webhookDeliveries, webhooks } from "../../db/schema";

/** Events fanned out per write batch: at most 50 subscriptions × 10 = 500 rows. */
const FANOUT_STEP_EVENTS = 10;

const d = webhookDeliveries;

/** Pending deliveries per `failing` subscription. */
const backlog = qb.$with("backlog").as(
  qb
    .select({ webhookId: d.webhookId, pending: sql<number>`count(*)`.as("pending") })
    .from(d)
    .where(and(eq(d.status, "pending"), inArray(d.webhookId, qb.select({ id: webhooks.id }).from(webhooks).where(eq(webhooks.status, "failing")))))
    .groupBy(d.webhookId),
);

/** Every (subscription, event) with `last_event_id < event.id <= upTo` whose type the subscription wants, numbered per subscription. */
const wanted = qb.$with("wanted").as(
  qb
    .select({
      webhookId: sql<number>`${webhooks.id}`.as("webhook_id"),
      eventId: sql<number>`${events.id}`.as("event_id"),
      status: sql<(typeof webhooks.$inferSelect)["status"]>`${webhooks.status}`.as("status"),
      pending: sql<number>`coalesce(${backlog.pending}, 0)`.as("pending"),
      position: sql<number>`row_number() OVER (PARTITION BY ${webhooks.id} ORDER BY ${events.id})`.as("position"),
    })
    .from(webhooks)
    .innerJoin(events, and(gt(events.id, webhooks.lastEventId), lte(events.id, sql.placeholder("upTo"))))
    .leftJoin(backlog, eq(backlog.webhookId, webhooks.id))
    .where(sql`${webhooks.events} = '["*"]' OR EXISTS (SELECT 1 FROM json_each(${webhooks.events}) j WHERE j.value = ${events.type})`),
);

/** The newest event id and the lowest cursor (null without subscriptions): what is left to fan out. */
export const fanOutRange = qb
  .select({
    maxEvent: sql<number>`coalesce(max(${events.id}), 0)`,
    minCursor: sql<number | null>`(SELECT min(${webhooks.lastEventId}) FROM ${webhooks})`,
  })
  .from(events)
  .prepare();

/** One fan-out batch: the missing deliveries of events up to `upTo`, then the cursors moved there. */
const fanning = plan({
  deliveries: statement(
    qb
      .with(backlog, wanted)
      .insert(d)
      .select(
        // Every column in table order (Drizzle's insert-select); a select from a CTE needs its SQL fields aliased.
        qb
          .select({
            id: sql<number>`NULL`.as("id"),
            webhookId: wanted.webhookId,
            eventId: wanted.eventId,
            status: sql<"pending">`'pending'`.as("status"),
            attempts: sql<number>`0`.as("attempts"),
            nextAttemptAt: sql<string>`${sql.placeholder("now")}`.as("next_attempt_at"),
            lastStatusCode: sql<null>`NULL`.as("last_status_code"),
            lastError: sql<null>`NULL`.as("last_error"),
            lastAttemptAt: sql<null>`NULL`.as("last_attempt_at"),
            deliveredAt: sql<null>`NULL`.as("delivered_at"),
          })
          .from(wanted)
          .where(or(ne(wanted.status, "failing"), lte(sql`${wanted.pending} + ${wanted.position}`, sql.placeholder("maxPending"))))
          // `sql` around CTE fields: orderBy takes columns or SQL, not aliased fields.
          .orderBy(sql`${wanted.webhookId}`, sql`${wanted.eventId}`),
      )
      .onConflictDoNothing({ target: [d.webhookId, d.eventId] })
      .prepare(),
  ),
  cursors: statement(
    qb
      .update(webhooks)
      .set({ lastEventId: sql`${sql.placeholder("upTo")}` })
      .where(lt(webhooks.lastEventId, sql.placeholder("upTo")))
      .prepare(),
  ),
});

/** What one fan-out covers (see `fanOut`). */
export interface FanOutRange {
  /** The lowest subscription cursor (null: no subscription, nothing to do). */
  from: number | null;
  /** The newest event id. */
  to: number;
  /** Most pending deliveries of a `failing` subscription (API.md §6: 10,000). */
  maxPendingPerFailing: number;
  now: () => Date;
  /** Checked before each batch: true stops the fan-out (deadline, shutdown); the rest waits for the next run. */
  stop: () => boolean;
}

/** Let pending I/O callbacks (e.g. requests on Node, where the embedded database runs on the main thread) run. */
export const yieldToEventLoop = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

/**
 * Fan out the events of `range` in batches of `FANOUT_STEP_EVENTS` events,
 * yielding to the event loop between them.
 * @returns how many delivery rows were created.
 */
export async function fanOut(db: Database, range: FanOutRange): Promise<number> {
  if (range.from === null) return 0;
  let queued = 0;
  for (let upTo = range.from; upTo < range.to && !range.stop(); ) {
    upTo = Math.min(range.to, upTo + FANOUT_STEP_EVENTS);
    const { deliveries } = await run(db, fanning, { upTo, now: range.now().toISOString(), maxPending: range.maxPendingPerFailing });
    queued += deliveries.rowsAffected;
    await yieldToEventLoop();
  }
  return queued;
}
