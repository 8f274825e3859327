/** Fan-out of events into deliveries behind one cursor, exactly one delivery per subscription and wanted event (docs/webhooks.md#design). */
import { and, eq, gt, inArray, lt, lte, ne, or, sql } from "drizzle-orm";
import { qb, type Database } from "../../db/client";
import { params, plan, run, statement } from "../../db/plan";
import { events, webhookDeliveries, webhookEventTypes, webhookFanout, webhooks } from "../../db/schema";

/** Events fanned out per write batch: at most 50 subscriptions × 10 = 500 rows. */
const FANOUT_STEP_EVENTS = 10;

const d = webhookDeliveries;

/** A fan-out batch: the events in (`from`, `upTo`], at most `maxPending` pending deliveries per failing subscription. */
const p = params<{ from: number; upTo: number; now: string; maxPending: number }>();
const cursor = params<{ upTo: number }>();
/** Pending deliveries per `failing` subscription (the partial index of failing subscriptions finds them). */
const backlog = qb.$with("backlog").as(
  qb
    .select({ webhookId: d.webhookId, pending: sql<number>`count(*)`.as("pending") })
    .from(d)
    .where(and(eq(d.status, "pending"), inArray(d.webhookId, qb.select({ id: webhooks.id }).from(webhooks).where(sql`${webhooks.status} = 'failing'`))))
    .groupBy(d.webhookId),
);

/** Every (subscription, event) with `from < event.id <= upTo` after the subscription's start whose type it wants, numbered per subscription. */
const wanted = qb.$with("wanted").as(
  qb
    .select({
      webhookId: sql<number>`${webhooks.id}`.as("webhook_id"),
      eventId: sql<number>`${events.id}`.as("event_id"),
      status: sql<(typeof webhooks.$inferSelect)["status"]>`${webhooks.status}`.as("status"),
      pending: sql<number>`coalesce(${backlog.pending}, 0)`.as("pending"),
      position: sql<number>`row_number() OVER (PARTITION BY ${webhooks.id} ORDER BY ${events.id})`.as("position"),
    })
    .from(events)
    .innerJoin(webhookEventTypes, sql`${webhookEventTypes.type} IN (${events.type}, '*')`)
    .innerJoin(webhooks, and(eq(webhooks.id, webhookEventTypes.webhookId), gt(events.id, webhooks.lastEventId)))
    .leftJoin(backlog, eq(backlog.webhookId, webhooks.id))
    .where(and(gt(events.id, p("from")), lte(events.id, p("upTo")))),
);

/** What is left to fan out: the newest event id, and where fan-out resumes (null: no subscription): the cursor, or the oldest subscription's start. */
export const fanOutRange = params<Record<never, never>>().prepare(
  qb
    .select({
      maxEvent: sql<number>`coalesce((SELECT max(${events.id}) FROM ${events}), 0)`,
      from: sql<number | null>`max(min(${webhooks.lastEventId}), (SELECT ${webhookFanout.lastEventId} FROM ${webhookFanout} WHERE ${webhookFanout.id} = 1))`,
    })
    .from(webhooks),
);

/** The cursor moved forward to `upTo` (never back). */
const moveCursor = cursor.prepare(
  qb
    .update(webhookFanout)
    .set({ lastEventId: sql`${cursor("upTo")}` })
    .where(and(eq(webhookFanout.id, 1), lt(webhookFanout.lastEventId, cursor("upTo")))),
);

/** One fan-out batch: the missing deliveries of events in (`from`, `upTo`], then the cursor moved to `upTo`. */
const fanning = plan({
  deliveries: p.statement(
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
            nextAttemptAt: sql<string>`${p("now")}`.as("next_attempt_at"),
            lastStatusCode: sql<null>`NULL`.as("last_status_code"),
            lastError: sql<null>`NULL`.as("last_error"),
            lastAttemptAt: sql<null>`NULL`.as("last_attempt_at"),
            deliveredAt: sql<null>`NULL`.as("delivered_at"),
          })
          .from(wanted)
          .where(or(ne(wanted.status, "failing"), lte(sql`${wanted.pending} + ${wanted.position}`, p("maxPending"))))
          // `sql` around CTE fields: orderBy takes columns or SQL, not aliased fields.
          .orderBy(sql`${wanted.webhookId}`, sql`${wanted.eventId}`),
      )
      .onConflictDoNothing({ target: [d.webhookId, d.eventId] }),
  ),
  cursor: statement(moveCursor),
});

/** The cursor alone moved to `upTo`: events nobody subscribed to when they were fanned out. */
const skipping = plan({ cursor: statement(moveCursor) });

/** Move the fan-out cursor to `upTo` without fanning out (no subscription exists). One write batch; writes nothing when it is there. */
export async function skipTo(db: Database, upTo: number): Promise<void> {
  await run(db, skipping, { upTo });
}

/** What one fan-out covers (see `fanOut`). */
export interface FanOutRange {
  /** Where fan-out resumes (null: no subscription, nothing to do). */
  from: number | null;
  /** The newest event id. */
  to: number;
  /** Most pending deliveries of a `failing` subscription (docs/api.md#events-and-webhooks: 10,000). */
  maxPendingPerFailing: number;
  now: () => Date;
  /** Checked before each batch: true stops the fan-out (deadline, shutdown); the rest waits for the next run. */
  stop: () => boolean;
}

/** Let pending I/O callbacks (e.g. requests on Node, where the embedded database runs on the main thread) run. */
export const yieldToEventLoop = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

/** Fan out the events of `range` in batches of `FANOUT_STEP_EVENTS`, yielding between them; resolves with the delivery rows created. */
export async function fanOut(db: Database, range: FanOutRange): Promise<number> {
  if (range.from === null) return 0;
  let queued = 0;
  for (let from = range.from; from < range.to && !range.stop(); ) {
    const upTo = Math.min(range.to, from + FANOUT_STEP_EVENTS);
    const { deliveries } = await run(db, fanning, { from, upTo, now: range.now().toISOString(), maxPending: range.maxPendingPerFailing });
    from = upTo;
    queued += deliveries.rowsAffected;
    await yieldToEventLoop();
  }
  return queued;
}
