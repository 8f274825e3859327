/** The frontier row (docs/webhooks.md#design): how far the log is fanned out, and the range a run holds for the subscriptions at it. */
import { and, eq, getTableColumns, type SQL, sql } from "drizzle-orm";
import { qb } from "../../db/client";
import { params, plan } from "../../db/plan";
import { events, webhookDispatch, webhookEventTypes, webhooks } from "../../db/schema";
import { variants } from "../../db/variants";

const D = webhookDispatch;
const w = webhooks;
const one = <T>(expression: SQL) => sql<T>`(SELECT ${expression} FROM ${D} WHERE ${D.id} = 1)`;

/** The frontier: every subscription whose `place` is NULL is done up to this event (a live range's members are being sent what follows). */
export const frontier = one<number>(sql`${D.eventId}`);
/** The newest event's id (0: none). */
export const newestEvent = sql<number>`coalesce((SELECT max(${events.id}) FROM ${events}), 0)`;
/**
 * How far the log is fanned out: the range's end while one is taken (even past its lease: a range taken again after a crash reaches at
 * least as far), else the frontier. A subscription at NULL that is no member of the range is done up to it.
 */
export const reach = one<number>(sql`coalesce(${D.leasedTo}, ${D.eventId})`);
/** The range's holder, the end of its lease, and its members' ids (JSON array). */
export const [rangeToken, heldRangeUntil] = [one<string | null>(sql`${D.leaseToken}`), one<string | null>(sql`${D.leaseUntil}`)];
const memberIds = sql`SELECT value FROM json_each(${one(sql`${D.members}`)})`;
/** Whether the subscription (`webhooks` row in scope) is a member of the range, still to be sent it by the range's holder (or its successor). */
export const member = sql`(${w.place} IS NULL AND ${w.leaseToken} IS NULL AND ${w.id} IN (${memberIds}))`;
/** Whether it is a member of the range live at `now`: its sends of the range are the range's holder's. */
export const liveMember = (now: SQL) => sql`(${member} AND ${heldRangeUntil} > ${now})`;
/** Whether the range is held by `token`. */
export const heldRange = (token: SQL) => sql`${rangeToken} = ${token}`;

/** The distinct event types some subscription wants, as a JSON array: a skip scan of the type index, a row read per type. */
const wantedTypes = sql<string>`(WITH RECURSIVE t(type) AS (
    SELECT min(${webhookEventTypes.type}) FROM ${webhookEventTypes}
    UNION ALL SELECT (SELECT min(${webhookEventTypes.type}) FROM ${webhookEventTypes} WHERE ${webhookEventTypes.type} > t.type) FROM t WHERE t.type IS NOT NULL)
  SELECT json_group_array(type) FROM t WHERE type IS NOT NULL)`;

/** Is anything to do (3 rows read): the frontier and its range's lease, the newest event, the earliest due time; `learning`: the wanted types too. */
export const probe = variants((learning: boolean) =>
  params<Record<never, never>>().prepare(
    qb
      .select({
        frontier: D.eventId,
        leaseUntil: D.leaseUntil,
        newest: newestEvent,
        nextDue: sql<string | null>`(SELECT min(${w.dueAt}) FROM ${w} WHERE ${w.dueAt} IS NOT NULL)`,
        types: learning ? wantedTypes : sql<string | null>`NULL`,
      })
      .from(D)
      .where(eq(D.id, 1)),
  ),
);

/** A subscription as a turn needs it: every column but `createdAt`. */
const { createdAt: _, ...columns } = getTableColumns(w);
export const SUBSCRIPTION = columns;

/**
 * Fanning out events (`from`, `upTo`] when no live range holds the frontier: the first `n` enabled, unclaimed subscriptions at the frontier
 * that want them become the range's `members` (held by `token` until `until`, their rows unwritten); the others that want them get
 * `place = from` (enabled ones due `now`). With no member, the frontier moves to `upTo` at once.
 */
const fan = params<{ from: number; upTo: number; now: string; until: string; token: string; n: number }>();
const wanting = sql`SELECT ${webhookEventTypes.webhookId} FROM ${webhookEventTypes} WHERE ${webhookEventTypes.type} IN (
  SELECT ${events.type} FROM ${events} WHERE ${events.id} > ${fan("from")} AND ${events.id} <= ${fan("upTo")} UNION ALL SELECT '*')`;
const free = sql`${D.eventId} = ${fan("from")} AND (${D.leaseToken} IS NULL OR ${D.leaseUntil} <= ${fan("now")})`;
const eligible = sql`SELECT ${w.id} FROM ${w} WHERE ${w.place} IS NULL AND ${w.enabled} AND ${w.leaseToken} IS NULL AND ${w.id} IN (${wanting}) ORDER BY ${w.id} LIMIT ${fan("n")}`;
/** After the marking, the subscriptions at the frontier that want the events are the members: their count `k` and ids `m` (JSON). */
const atFrontier = sql`(SELECT count(*) AS k, json_group_array(${w.id}) AS m FROM ${w} WHERE ${w.place} IS NULL AND ${w.id} IN (${wanting})) x`;
const anyMember = sql`x.k > 0`;
export const fanOut = plan({
  marked: fan.statement(
    qb
      .update(w)
      .set({
        place: sql`${fan("from")}`,
        attempts: 0,
        retryAt: null,
        dueAt: sql`CASE WHEN ${w.leaseToken} IS NOT NULL THEN ${w.dueAt} WHEN ${w.enabled} THEN ${fan("now")} END`,
      })
      .where(
        sql`${w.place} IS NULL AND ${w.id} IN (${wanting}) AND ${w.id} NOT IN (${eligible}) AND EXISTS (SELECT 1 FROM ${D} WHERE ${D.id} = 1 AND ${free})`,
      ),
  ),
  range: fan.statement(
    qb
      .update(D)
      .set({
        eventId: sql`CASE WHEN ${anyMember} THEN ${D.eventId} ELSE ${fan("upTo")} END`,
        leasedTo: sql`CASE WHEN ${anyMember} THEN ${fan("upTo")} END`,
        leaseToken: sql`CASE WHEN ${anyMember} THEN ${fan("token")} END`,
        leaseUntil: sql`CASE WHEN ${anyMember} THEN ${fan("until")} END`,
        members: sql`CASE WHEN ${anyMember} THEN x.m END`,
      })
      .from(atFrontier)
      .where(and(eq(D.id, 1), free)),
  ),
  members: fan.statement(
    qb
      .select(SUBSCRIPTION)
      .from(w)
      .where(sql`${w.id} IN (${memberIds}) AND ${heldRange(sql`${fan("token")}`)}`)
      .orderBy(w.id),
  ),
});

/** The range of `token` given up by its member `id` still sending at its close: the member's own claim now, at the range's start. */
const det = params<{ id: number; token: string; from: number; until: string }>();
const heldBy = (token: SQL) => sql`(${w.leaseToken} = ${token} OR (${w.leaseToken} IS NULL AND ${heldRange(token)}))`;
export const detach = plan({
  subscription: det.statement(
    qb
      .update(w)
      .set({ place: sql`coalesce(${w.place}, ${det("from")})`, leaseToken: sql`${det("token")}`, dueAt: sql`${det("until")}` })
      .where(and(eq(w.id, det("id")), heldBy(sql`${det("token")}`))),
  ),
});

/** The range of `token` closed: the frontier moves to its end (nothing when the lease ended and another run took the range). */
const closing = params<{ token: string }>();
export const closeRange = plan({
  frontier: closing.statement(
    qb
      .update(D)
      .set({ eventId: sql`coalesce(${D.leasedTo}, ${D.eventId})`, leasedTo: null, leaseToken: null, leaseUntil: null, members: null })
      .where(and(eq(D.id, 1), eq(D.leaseToken, closing("token")))),
  ),
});
