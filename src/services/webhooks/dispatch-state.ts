/** The dispatch state (`webhookDispatch`, one row; docs/webhooks.md#design): a run's probe, a round's lease, reads and release. */
import { and, eq, exists, getTableColumns, gt, isNull, lte, or, sql } from "drizzle-orm";
import { qb } from "../../db/client";
import { params, plan } from "../../db/plan";
import { events, webhookDeliveries, webhookDispatch, webhookEventTypes, webhookRedeliveries, webhooks } from "../../db/schema";
import { variants } from "../../db/variants";

/** A subscription behind the state's event id: done up to `after`, due at `due` (absent: now), leased to round `token` until `lease`; `verify`: check the log. */
export interface QueueEntry {
  after: number;
  /** Failed attempts of the event after `after` so far. */
  attempts?: number;
  due?: string;
  lease?: string;
  token?: string;
  verify?: boolean;
}

/** The queue of the dispatch state, by subscription id. */
export type Queue = Record<string, QueueEntry>;

/** Every member an entry may have: a patch names each (null: absent), so no member of an entry it replaces survives it (RFC 7396). */
const MEMBERS = ["after", "attempts", "due", "lease", "token", "verify"] as const satisfies readonly (keyof QueueEntry)[];

/** The queue stored as JSON text. */
export function parseQueue(text: string | undefined): Queue {
  return JSON.parse(text ?? "{}") as Queue;
}

/** The JSON Merge Patch (RFC 7396) that sets each entry of `entries` whole, or removes it (null). */
export function queuePatch(entries: Record<string, QueueEntry | null>): string {
  const patch: Record<string, Record<string, unknown> | null> = {};
  for (const [id, entry] of Object.entries(entries)) patch[id] = entry && Object.fromEntries(MEMBERS.map((m) => [m, entry[m] ?? null]));
  return JSON.stringify(patch);
}

/** True while a round's attempts to the entry's subscription are out (its lease has not ended at `now`, RFC 3339). */
export function isLeased(entry: QueueEntry | undefined, now: string): boolean {
  return entry?.lease !== undefined && entry.lease > now;
}

/** True when the entry's next event may be sent at `now`: not leased, and due. */
export function isDue(entry: QueueEntry, now: string): boolean {
  return !isLeased(entry, now) && (entry.due === undefined || entry.due <= now);
}

/** True when the delivery log must be read before sending after `after`: a lease that ended without its round's record, or `verify`. */
export function needsCheck(entry: QueueEntry | undefined, now: string): boolean {
  return entry !== undefined && (entry.verify === true || (entry.token !== undefined && !isLeased(entry, now)));
}

const D = webhookDispatch;
const r = webhookRedeliveries;

/** The distinct event types some subscription wants, as a JSON array: a skip scan of the type index, a row read per type. */
const wantedTypes = sql<string>`(WITH RECURSIVE t(type) AS (
    SELECT min(${webhookEventTypes.type}) FROM ${webhookEventTypes}
    UNION ALL SELECT (SELECT min(${webhookEventTypes.type}) FROM ${webhookEventTypes} WHERE ${webhookEventTypes.type} > t.type) FROM t WHERE t.type IS NOT NULL)
  SELECT json_group_array(type) FROM t WHERE type IS NOT NULL)`;

/** Is anything due at `now` (3 rows read): new events, an enabled subscription's redelivery, a queue entry (caller judges)? `learning`: types wanted too. */
const probing = params<{ now: string }>();
export const probe = variants((learning: boolean) =>
  probing.prepare(
    qb
      .select({
        eventId: D.eventId,
        queue: D.queue,
        leaseUntil: D.leaseUntil,
        newest: sql<number>`coalesce((SELECT max(${events.id}) FROM ${events}), 0)`,
        redeliveries: sql<number>`${exists(
          qb
            .select({ one: sql`1` })
            .from(r)
            .innerJoin(webhooks, and(eq(webhooks.id, r.webhookId), eq(webhooks.enabled, true)))
            .where(lte(r.nextAttemptAt, probing("now"))),
        )}`,
        types: learning ? wantedTypes : sql<string | null>`NULL`,
      })
      .from(D)
      .where(eq(D.id, 1)),
  ),
);

/** The lease of a round: taken when free or ended at `now`, until `until`; returns the state's event id (only a lease holder moves it). */
const claiming = params<{ token: string; until: string; now: string }>();
export const claim = claiming.prepare(
  qb
    .update(D)
    .set({ leaseToken: sql`${claiming("token")}`, leaseUntil: sql`${claiming("until")}` })
    .where(and(eq(D.id, 1), or(isNull(D.leaseUntil), lte(D.leaseUntil, claiming("now")))))
    .returning({ eventId: D.eventId }),
);

/** The end of a round that holds `token`: the state's event id moved to `eventId`, the queue merged with `delta` (RFC 7396), the lease freed. */
const releasing = params<{ token: string; eventId: number; delta: string }>();
export const release = releasing.statement(
  qb
    .update(D)
    .set({
      eventId: sql`max(${D.eventId}, ${releasing("eventId")})`,
      queue: sql`json_patch(${D.queue}, ${releasing("delta")})`,
      leaseToken: null,
      leaseUntil: null,
    })
    .where(and(eq(D.id, 1), eq(D.leaseToken, releasing("token")))),
);

/** The end of attempts that outlived their round: the entry they hold (`token`) set to `patch`, or `removal` if no round holds the state and event id ≤ `upTo`. */
const finishing = params<{ id: string; token: string; patch: string; removal: string | null; upTo: number }>();
export const finish = finishing.statement(
  qb
    .update(D)
    .set({
      queue: sql`json_patch(${D.queue}, CASE WHEN ${finishing("removal")} IS NOT NULL AND ${D.eventId} <= ${finishing("upTo")} AND ${D.leaseToken} IS NULL THEN ${finishing("removal")} ELSE ${finishing("patch")} END)`,
    })
    .where(and(eq(D.id, 1), sql`json_extract(${D.queue}, '$."' || ${finishing("id")} || '".token') = ${finishing("token")}`)),
);

/** A paused subscription leaves the queue and keeps its place itself (`parked`: the queue patch then), unless it was resumed meanwhile (`kept`). */
const parkingP = params<{ id: number; after: number; parked: string; kept: string }>();
export const parking = plan({
  subscription: parkingP.statement(
    qb
      .update(webhooks)
      .set({ pausedAfter: sql`${parkingP("after")}` })
      .where(and(eq(webhooks.id, parkingP("id")), eq(webhooks.enabled, false), isNull(webhooks.pausedAfter))),
  ),
  queue: parkingP.statement(
    qb
      .update(D)
      .set({ queue: sql`json_patch(${D.queue}, CASE WHEN changes() = 1 THEN ${parkingP("parked")} ELSE ${parkingP("kept")} END)` })
      .where(eq(D.id, 1)),
  ),
});

/** What a round needs of a subscription: every column but `createdAt`, in table order. */
const { createdAt: _, ...SUBSCRIPTION } = getTableColumns(webhooks);

/** Events with `from < id <= upTo`, in id order, at most `limit`. */
const span = params<{ from: number; upTo: number; limit: number }>();
export const eventSpan = span.prepare(
  qb
    .select()
    .from(events)
    .where(and(gt(events.id, span("from")), lte(events.id, span("upTo"))))
    .orderBy(events.id)
    .limit(span("limit")),
);

/** The dispatch state's queue, read in the round's snapshot: a resume writes its entry and its subscription in one batch. */
export const queueNow = params<Record<never, never>>().prepare(qb.select({ queue: D.queue }).from(D).where(eq(D.id, 1)));

/** The subscriptions a round may send to: those wanting a type of the events in (`from`, `upTo`] (type index), queued, or with a redelivery due. */
const involved = params<{ from: number; upTo: number; now: string }>();
export const subscriptions = involved.prepare(
  qb
    .select({
      ...SUBSCRIPTION,
      /** A redelivery of it is due (an index seek on its redeliveries). */
      redeliveryDue: sql<number>`${exists(
        qb
          .select({ one: sql`1` })
          .from(r)
          .where(and(eq(r.webhookId, webhooks.id), lte(r.nextAttemptAt, involved("now")))),
      )}`,
    })
    .from(webhooks)
    .where(
      sql`${webhooks.id} IN (
        SELECT ${webhookEventTypes.webhookId} FROM ${webhookEventTypes} WHERE ${webhookEventTypes.type} IN (
          SELECT ${events.type} FROM ${events} WHERE ${events.id} > ${involved("from")} AND ${events.id} <= ${involved("upTo")} UNION ALL SELECT '*')
        UNION SELECT CAST(key AS INTEGER) FROM json_each((SELECT ${D.queue} FROM ${D} WHERE ${D.id} = 1))
        UNION SELECT ${r.webhookId} FROM ${r} WHERE ${r.nextAttemptAt} <= ${involved("now")})`,
    ),
);

/** A redelivery's columns but its due time, and its event's but the id. */
const { nextAttemptAt: _due, ...REDELIVERY } = getTableColumns(r);
const { id: _id, ...EVENT } = getTableColumns(events);
/** Subscription `webhookId`'s redeliveries due at `now`, in the order they were queued, at most `limit`, with their event (absent: pruned, or 0 for a test). */
const dueP = params<{ webhookId: number; now: string; limit: number }>();
export const dueRedeliveries = dueP.prepare(
  qb
    .select({ ...REDELIVERY, ...EVENT })
    .from(r)
    .leftJoin(events, eq(events.id, r.eventId))
    .where(and(eq(r.webhookId, dueP("webhookId")), lte(r.nextAttemptAt, dueP("now"))))
    .orderBy(r.id)
    .limit(dueP("limit")),
);

/** The events after `after` whose delivery to subscription `webhookId` is done; `unordered`: a pending one too (it is retried on its own). */
const doneP = params<{ webhookId: number; after: number; unordered: boolean }>();
const d = webhookDeliveries;
export const finishedAfter = doneP.prepare(
  qb
    .select({ eventId: d.eventId })
    .from(d)
    .where(
      and(
        eq(d.webhookId, doneP("webhookId")),
        sql`${d.status} IN ('delivered', 'failed', CASE WHEN ${doneP("unordered")} THEN 'pending' END)`,
        gt(d.eventId, doneP("after")),
      ),
    ),
);
