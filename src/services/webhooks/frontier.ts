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
/** How far the log is fanned out (a subscription at NULL that is no range member is done up to it): the range's end while one is taken, else the frontier. */
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

/** `<due time> <claim token>` of the earliest due subscription: one read of the due-time index. */
const earliestDue = sql<
  string | null
>`(SELECT ${w.dueAt} || ' ' || coalesce(${w.leaseToken}, '') FROM ${w} WHERE ${w.dueAt} IS NOT NULL ORDER BY ${w.dueAt} LIMIT 1)`;
/** Is anything to do (3 rows read): the frontier and its range's holder and lease, the newest event, the earliest due time and its holder; `learning`: the wanted types too. */
export const probe = variants((learning: boolean) =>
  params<Record<never, never>>().prepare(
    qb
      .select({
        frontier: D.eventId,
        leaseUntil: D.leaseUntil,
        holder: D.leaseToken,
        newest: newestEvent,
        next: earliestDue,
        types: learning ? wantedTypes : sql<string | null>`NULL`,
      })
      .from(D)
      .where(eq(D.id, 1)),
  ),
);

/** A subscription as a turn needs it: every column but `createdAt`. */
const { createdAt: _, ...columns } = getTableColumns(w);
export const SUBSCRIPTION = columns;

/** Fanning out events (`from`, `upTo`]: the first `n` enabled, unclaimed ones at the frontier wanting them are the range's members; the others get a place. */
const fan = params<{ from: number; upTo: number; now: string; until: string; token: string; n: number }>();
const t = webhookEventTypes;
/** The events' types: with `*`, the keys of the type index that a subscription wanting one of the events lists. */
const eventTypes = sql`SELECT ${events.type} FROM ${events} WHERE ${events.id} > ${fan("from")} AND ${events.id} <= ${fan("upTo")}`;
const wanting = sql`SELECT ${t.webhookId} FROM ${t} WHERE ${t.type} IN (${eventTypes} UNION ALL SELECT '*')`;
const free = sql`${D.eventId} = ${fan("from")} AND (${D.leaseToken} IS NULL OR ${D.leaseUntil} <= ${fan("now")})`;
const eligible = sql`SELECT ${w.id} FROM ${w} WHERE ${w.place} IS NULL AND ${w.enabled} AND ${w.leaseToken} IS NULL AND ${w.id} IN (${wanting}) ORDER BY ${w.id} LIMIT ${fan("n")}`;
/** The subscriptions at the frontier that want the events (a join on the type index): their ids `m` (JSON), and `r`, how many are paused or claimed. */
const atFrontier = sql`(SELECT json_group_array(DISTINCT ${w.id}) AS m, count(*) FILTER (WHERE NOT (${w.enabled} AND ${w.leaseToken} IS NULL)) AS r
  FROM ${t} JOIN ${w} ON ${w.id} = ${t.webhookId} WHERE (${t.type} = '*' OR ${t.type} IN (${eventTypes})) AND ${w.place} IS NULL) x`;
const anyMember = sql`x.m <> '[]'`;
/** The frontier while it is free, as a row source: a statement over it reads one row once a step before took the frontier. */
const whileFree = sql`(SELECT 1 FROM ${D} WHERE ${D.id} = 1 AND ${free}) f`;
/** While the frontier is free and every subscription at it that wants the events can be a member: the range taken from `source` (naming `x`). */
const take = (source: SQL) =>
  fan.statement(
    qb
      .update(D)
      .set({
        eventId: sql`CASE WHEN ${anyMember} THEN ${D.eventId} ELSE ${fan("upTo")} END`,
        leasedTo: sql`CASE WHEN ${anyMember} THEN ${fan("upTo")} END`,
        leaseToken: sql`CASE WHEN ${anyMember} THEN ${fan("token")} END`,
        leaseUntil: sql`CASE WHEN ${anyMember} THEN ${fan("until")} END`,
        members: sql`CASE WHEN ${anyMember} THEN x.m END`,
      })
      .from(source)
      .where(and(eq(D.id, 1), free, sql`x.r = 0 AND json_array_length(x.m) <= ${fan("n")}`)),
  );
/** The members' rows, if the range is `token`'s. */
const members = fan.statement(
  qb
    .select(SUBSCRIPTION)
    .from(D)
    .innerJoin(sql`json_each(${D.members}) j`, sql`true`)
    .innerJoin(w, sql`${w.id} = j.value`)
    .where(and(eq(D.id, 1), eq(D.leaseToken, fan("token")))),
);
/** The fan-out, one batch, when every subscription that wants the events can be a member: `whole` takes the range, `members` reads their rows. */
export const fanOut = plan({ whole: take(atFrontier), members });
/** The fan-out's second batch, when `fanOut` took nothing: `marked` gives those that cannot be members a place, `rest` takes the range for the others. */
export const fanOutRest = plan({
  marked: fan.statement(
    qb
      .update(w)
      .set({
        place: sql`${fan("from")}`,
        attempts: 0,
        retryAt: null,
        dueAt: sql`CASE WHEN ${w.leaseToken} IS NOT NULL THEN ${w.dueAt} WHEN ${w.enabled} THEN ${fan("now")} END`,
      })
      .from(whileFree)
      .where(sql`${w.place} IS NULL AND ${w.id} IN (${wanting}) AND ${w.id} NOT IN (${eligible})`),
  ),
  // The frontier read first: once another run took it, this reads its row and nothing else.
  rest: take(sql`${whileFree} CROSS JOIN ${atFrontier}`),
  members,
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

/** What a holder that exited held ended at `now`: the range, and the claims of the tokens starting with `owner` (due now, paused ones never; a scan, after a crash only). */
const gone = params<{ owner: string; now: string }>();
const owns = (token: SQL) => sql`substr(${token}, 1, length(${gone("owner")})) = ${gone("owner")}`;
const [rangeEnded, claimsEnded] = [{ leaseUntil: sql`${gone("now")}` }, { dueAt: sql`CASE WHEN ${w.enabled} THEN ${gone("now")} END`, leaseToken: null }];
export const endExited = plan({
  range: gone.statement(
    qb
      .update(D)
      .set(rangeEnded)
      .where(and(eq(D.id, 1), owns(sql`${D.leaseToken}`))),
  ),
  claims: gone.statement(
    qb
      .update(w)
      .set(claimsEnded)
      .where(owns(sql`${w.leaseToken}`)),
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
