/** Deliveries outside the ordered stream (docs/webhooks.md#managing-a-subscription): resend, recover, test; queued here, sent by dispatch rounds. */
import { and, eq, gt, gte, isNull, notExists, type SQL, sql } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import { qb, type Database } from "../../db/client";
import { execute, type Params, params, plan, read, run } from "../../db/plan";
import { events as eventLog, webhookDeliveries, webhookRedeliveries, webhooks } from "../../db/schema";
import { LimitReached, NotFound } from "../../domain/errors";
import { storedInterest, type WebhookDelivery, wants } from "../../domain/webhooks";
import { insertRedelivery, type QueuedRedelivery } from "./outcomes";
import { subscriptionExists } from "./subscriptions";

const r = webhookRedeliveries;
const d = webhookDeliveries;

const pair = params<{ webhookId: number; eventId: number }>();
/** The subscription's interest and the event, in one snapshot. */
const lookup = plan({
  subscription: pair.statement(
    qb
      .select({ events: webhooks.events, start: webhooks.lastEventId, typesSince: webhooks.typesSince, previousEvents: webhooks.previousEvents })
      .from(webhooks)
      .where(eq(webhooks.id, pair("webhookId"))),
  ),
  event: pair.statement(
    qb
      .select({ id: eventLog.id, type: eventLog.type })
      .from(eventLog)
      .where(eq(eventLog.id, pair("eventId"))),
  ),
});

/** Room for `max` − (redeliveries queued for `webhookId`) more, at least 0 (reads at most `max` index entries). */
const room = (webhookId: SQL | SQLiteColumn, max: SQL) =>
  sql<number>`max(0, ${max} - (SELECT count(*) FROM (SELECT 1 FROM ${r} WHERE ${r.webhookId} = ${webhookId} LIMIT ${max})))`;

/** The step "subscription `webhookId` is due at `now`" (after a redelivery was queued); a claim's release sets its own due time. */
function dueNow<V extends { webhookId: number; now: string }>(p: Params<V>) {
  return p.statement(
    qb
      .update(webhooks)
      .set({ dueAt: sql`${p("now")}` })
      .where(and(eq(webhooks.id, p("webhookId")), eq(webhooks.enabled, true), isNull(webhooks.leaseToken), sql`coalesce(${webhooks.dueAt} > ${p("now")}, 1)`)),
  );
}

const queued = params<QueuedRedelivery & { now: string; max: number }>();
/** One redelivery of `eventId` (0: a test) for the subscription, if it exists and has fewer than `max` queued. */
const queueing = plan({
  subscription: subscriptionExists(queued),
  redelivery: queued.statement(insertRedelivery(queued, sql`${room(webhooks.id, sql`${queued("max")}`)} > 0`).returning({ id: r.id })),
  due: dueNow(queued),
});

/** A redelivery just queued, as the delivery log will show it. */
function pending(webhookId: number, eventId: number, eventType: WebhookDelivery["eventType"], now: string): WebhookDelivery {
  return { webhookId, eventId, eventType, status: "pending", attempts: 0, nextAttemptAt: now };
}

/** Queue one more delivery of event `eventId` to subscription `webhookId`. @throws NotFound (subscription, or a retained event it wants), LimitReached. */
export async function resendEvent(db: Database, webhookId: number, eventId: number, now: Date, max: number): Promise<WebhookDelivery> {
  const { subscription, event } = await read(db, lookup, { webhookId, eventId });
  const [s] = subscription;
  if (!s) throw new NotFound("webhook", webhookId);
  const [e] = event;
  // Any retained event the subscription's types want, from before its start too.
  if (!e || !wants(storedInterest({ ...s, start: 0 }), e)) throw new NotFound("event", eventId);
  const at = now.toISOString();
  await queue(db, { webhookId, eventId, now: at, max });
  return pending(webhookId, eventId, e.type, at);
}

/** Queue a `webhook.test` delivery (event 0) to subscription `webhookId`. @throws NotFound, LimitReached. */
export async function sendTestEvent(db: Database, webhookId: number, now: Date, max: number): Promise<WebhookDelivery> {
  const at = now.toISOString();
  await queue(db, { webhookId, eventId: 0, now: at, max });
  return pending(webhookId, 0, "webhook.test", at);
}

/** Queue one redelivery. @throws NotFound (no such subscription), LimitReached (`max` already queued for it). */
async function queue(db: Database, values: { webhookId: number; eventId: number; now: string; max: number }): Promise<void> {
  const { subscription, redelivery } = await run(db, queueing, { ...values, attempts: 0, nextAttemptAt: values.now, createdAt: values.now });
  if (subscription.length === 0) throw new NotFound("webhook", values.webhookId);
  if (redelivery.length === 0) throw new LimitReached("redeliveries", values.max);
}

const since = params<{ webhookId: number; since: string; now: string; max: number }>();
/** Every given-up delivery of the subscription whose event retention holds and was committed at or after `since`, queued again in event order. */
const recovering = plan({
  subscription: subscriptionExists(since),
  redeliveries: since.statement(
    qb.insert(r).select(
      qb
        .select({
          id: sql<null>`NULL`.as("id"),
          webhookId: d.webhookId,
          eventId: d.eventId,
          attempts: sql<number>`0`.as("attempts"),
          nextAttemptAt: sql<string>`${since("now")}`.as("next_attempt_at"),
          createdAt: sql<string>`${since("now")}`.as("created_at"),
        })
        .from(d)
        .innerJoin(eventLog, eq(eventLog.id, d.eventId))
        .where(
          and(
            eq(d.webhookId, since("webhookId")),
            eq(d.status, "failed"),
            gt(d.eventId, 0),
            gte(eventLog.occurredAt, since("since")),
            notExists(
              qb
                .select({ one: sql`1` })
                .from(r)
                .where(and(eq(r.webhookId, d.webhookId), eq(r.eventId, d.eventId))),
            ),
          ),
        )
        .orderBy(d.eventId)
        // At most the room left under `max` (LIMIT takes any scalar expression).
        .limit(room(sql`${since("webhookId")}`, sql`${since("max")}`) as unknown as number),
    ),
  ),
  due: dueNow(since),
});

/** The room left under `max` for subscription `webhookId`'s redeliveries. */
const roomP = params<{ webhookId: number; max: number }>();
const roomLeft = roomP.prepare(qb.select({ left: room(sql`${roomP("webhookId")}`, sql`${roomP("max")}`) }).from(sql`(SELECT 1)`));

/** Queue again, in event order, every given-up delivery to `webhookId` of events since `sinceAt`: how many. @throws NotFound, LimitReached. */
export async function recoverSince(db: Database, webhookId: number, sinceAt: Date, now: Date, max: number): Promise<number> {
  const { subscription, redeliveries } = await run(db, recovering, { webhookId, since: sinceAt.toISOString(), now: now.toISOString(), max });
  if (subscription.length === 0) throw new NotFound("webhook", webhookId);
  // Nothing queued: nothing to recover, or no room (counted only then).
  if (redeliveries.rowsAffected === 0 && (await execute(db, roomLeft, { webhookId, max }))[0]?.left === 0) throw new LimitReached("redeliveries", max);
  return redeliveries.rowsAffected;
}
