/** The engine's shared state (docs/webhooks.md#design): the frontier row, and each subscription's place, due time and claim as typed columns. */
import { and, eq, getTableColumns, gt, lte, sql } from "drizzle-orm";
import { qb } from "../../db/client";
import { params, plan, type ResultOf } from "../../db/plan";
import { events, webhookDispatch, webhookEventTypes, webhookRedeliveries, webhooks } from "../../db/schema";
import { variants } from "../../db/variants";
import type { WebhookStatus } from "../../domain/webhooks";

const D = webhookDispatch;
const w = webhooks;
const r = webhookRedeliveries;

/** The frontier: every subscription whose `place` is NULL is done up to this event. */
export const frontier = sql<number>`(SELECT ${D.eventId} FROM ${D} WHERE ${D.id} = 1)`;
/** The newest event's id (0: none). */
export const newestEvent = sql<number>`coalesce((SELECT max(${events.id}) FROM ${events}), 0)`;

/** The distinct event types some subscription wants, as a JSON array: a skip scan of the type index, a row read per type. */
const wantedTypes = sql<string>`(WITH RECURSIVE t(type) AS (
    SELECT min(${webhookEventTypes.type}) FROM ${webhookEventTypes}
    UNION ALL SELECT (SELECT min(${webhookEventTypes.type}) FROM ${webhookEventTypes} WHERE ${webhookEventTypes.type} > t.type) FROM t WHERE t.type IS NOT NULL)
  SELECT json_group_array(type) FROM t WHERE type IS NOT NULL)`;

/** Is anything to do (3 rows read): the frontier, the newest event, the earliest due time of any subscription; `learning`: the wanted types too. */
export const probe = variants((learning: boolean) =>
  params<Record<never, never>>().prepare(
    qb
      .select({
        frontier: D.eventId,
        newest: newestEvent,
        nextDue: sql<string | null>`(SELECT min(${w.dueAt}) FROM ${w} WHERE ${w.dueAt} IS NOT NULL)`,
        types: learning ? wantedTypes : sql<string | null>`NULL`,
      })
      .from(D)
      .where(eq(D.id, 1)),
  ),
);

/** What a claim returns: the subscription as a turn needs it (every column but `createdAt`), and the frontier. */
const { createdAt: _, ...SUBSCRIPTION } = getTableColumns(w);
const CLAIMED = { ...SUBSCRIPTION, frontier };

/** Fanning out events (`from`, `upTo`]: wanting subscriptions at the frontier get `place = from`; up to `n` enabled ones are claimed by `token`. */
const fan = params<{ from: number; upTo: number; now: string; until: string; token: string; n: number }>();
const wanting = sql`SELECT ${webhookEventTypes.webhookId} FROM ${webhookEventTypes} WHERE ${webhookEventTypes.type} IN (
  SELECT ${events.type} FROM ${events} WHERE ${events.id} > ${fan("from")} AND ${events.id} <= ${fan("upTo")} UNION ALL SELECT '*')`;
const atFrontier = sql`${frontier} = ${fan("from")}`;
/** A subscription at the frontier placed at the events' start, its head fresh. */
const placed = { place: sql`${fan("from")}`, attempts: 0, retryAt: null };
export const fanOut = plan({
  claimed: fan.statement(
    qb
      .update(w)
      .set({ ...placed, dueAt: sql`${fan("until")}`, leaseToken: sql`${fan("token")}` })
      .where(
        sql`${w.id} IN (SELECT ${w.id} FROM ${w} WHERE ${w.place} IS NULL AND ${w.enabled} AND ${w.leaseToken} IS NULL AND ${w.id} IN (${wanting}) LIMIT ${fan("n")}) AND ${atFrontier}`,
      )
      .returning(CLAIMED),
  ),
  marked: fan.statement(
    qb
      .update(w)
      .set({ ...placed, dueAt: sql`CASE WHEN ${w.leaseToken} IS NOT NULL THEN ${w.dueAt} WHEN ${w.enabled} THEN ${fan("now")} END` })
      .where(sql`${w.place} IS NULL AND ${w.id} IN (${wanting}) AND ${atFrontier}`),
  ),
  frontier: fan.statement(
    qb
      .update(D)
      .set({ eventId: sql`${fan("upTo")}` })
      .where(and(eq(D.id, 1), eq(D.eventId, fan("from")))),
  ),
});

/** Claim up to `n` enabled subscriptions due at `now`, earliest first, for `token` until `until` (an ended claim is claimed again). */
const due = params<{ now: string; until: string; token: string; n: number }>();
export const claimDue = due.prepare(
  qb
    .update(w)
    .set({ dueAt: sql`${due("until")}`, leaseToken: sql`${due("token")}` })
    .where(sql`${w.id} IN (SELECT ${w.id} FROM ${w} WHERE ${w.dueAt} <= ${due("now")} AND ${w.enabled} ORDER BY ${w.dueAt} LIMIT ${due("n")})`)
    .returning(CLAIMED),
);

/** A subscription as a claim returns it. */
export type Claimed = ResultOf<typeof claimDue>[number];

/** What a turn leaves of a subscription: its place, its head's failed attempts and retry time, and the outcome of its last attempts. */
export interface Release {
  id: number;
  token: string;
  place: number;
  attempts: number;
  retryAt: string | null;
  now: string;
  /** Its new status (`failing` after a give-up, `active` after a delivery), or null: unchanged. */
  status: WebhookStatus | null;
  /** The last attempt delivered (1), failed (0), or none was made (null). */
  lastOk: number | null;
  /** The first failed attempt after the last delivered one, or null. */
  failedAt: string | null;
  /** A subscription failing since this instant or earlier is disabled (now − WEBHOOK_DISABLE_AFTER_HOURS). */
  disableBefore: string;
}
const rel = params<Release>();
/** Every attempt failed for long enough: the subscription is disabled. */
const disable = sql`(${rel("lastOk")} = 0 AND coalesce(${w.failingSince}, ${rel("failedAt")}) <= ${rel("disableBefore")})`;
/** When its stream is next due: its head's retry, now while it is behind the frontier, else never; or its earliest redelivery if sooner. */
const stream = sql`CASE WHEN ${rel("attempts")} > 0 THEN ${rel("retryAt")} WHEN ${rel("place")} < ${frontier} THEN ${rel("now")} END`;
const redelivery = sql`(SELECT min(${r.nextAttemptAt}) FROM ${r} WHERE ${r.webhookId} = ${w.id})`;
/** The end of a claim held by `token`: the subscription's next place and due time, its status; nothing when another claim or a delete came first. */
export const release = plan({
  subscription: rel.statement(
    qb
      .update(w)
      .set({
        place: sql`CASE WHEN ${rel("attempts")} = 0 AND ${rel("place")} >= ${frontier} AND ${w.typesSince} <= ${rel("place")} THEN NULL ELSE ${rel("place")} END`,
        attempts: sql`${rel("attempts")}`,
        retryAt: sql`${rel("retryAt")}`,
        dueAt: sql`CASE WHEN ${disable} OR NOT ${w.enabled} THEN NULL ELSE min(coalesce(${stream}, ${redelivery}), coalesce(${redelivery}, ${stream})) END`,
        leaseToken: null,
        failingSince: sql`CASE WHEN ${rel("lastOk")} = 1 THEN NULL WHEN ${rel("failedAt")} IS NOT NULL THEN coalesce(${w.failingSince}, ${rel("failedAt")}) ELSE ${w.failingSince} END`,
        enabled: sql`CASE WHEN ${disable} THEN 0 ELSE ${w.enabled} END`,
        status: sql`CASE WHEN ${disable} THEN 'disabled' ELSE coalesce(${rel("status")}, ${w.status}) END`,
      })
      .where(and(eq(w.id, rel("id")), eq(w.leaseToken, rel("token")))),
  ),
});

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

/** A redelivery's columns but its due time, and its event's but the id. */
const { nextAttemptAt: _due, ...REDELIVERY } = getTableColumns(r);
const { id: _id, ...EVENT } = getTableColumns(events);
/** Subscription `webhookId`'s redeliveries due at `now`, earliest first (then in the order queued), at most `count`, with their event (absent: pruned, or 0 for a test). */
const dueP = params<{ webhookId: number; now: string; count: number }>();
export const dueRedeliveries = dueP.prepare(
  qb
    .select({ ...REDELIVERY, ...EVENT })
    .from(r)
    .leftJoin(events, eq(events.id, r.eventId))
    .where(and(eq(r.webhookId, dueP("webhookId")), lte(r.nextAttemptAt, dueP("now"))))
    .orderBy(r.nextAttemptAt, r.id)
    .limit(dueP("count")),
);
