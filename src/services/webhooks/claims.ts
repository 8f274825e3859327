/** Each subscription's delivery state (docs/webhooks.md#design): its place, due time and claim as typed columns, claimed and released. */
import { and, eq, getTableColumns, gt, lte, sql } from "drizzle-orm";
import { qb } from "../../db/client";
import { params, plan, type ResultOf } from "../../db/plan";
import { events, webhookRedeliveries, webhooks } from "../../db/schema";
import type { WebhookStatus } from "../../domain/webhooks";
import { heldRange, liveMember, reach, SUBSCRIPTION } from "./frontier";

const w = webhooks;
const r = webhookRedeliveries;

/** Claim up to `n` enabled subscriptions due at `now` (no live range's members), earliest first, for `token` until `until` (an ended claim is claimed again). */
const due = params<{ now: string; until: string; token: string; n: number }>();
export const claimDue = due.prepare(
  qb
    .update(w)
    .set({ dueAt: sql`${due("until")}`, leaseToken: sql`${due("token")}` })
    .where(
      sql`${w.id} IN (SELECT ${w.id} FROM ${w} WHERE ${w.dueAt} <= ${due("now")} AND ${w.enabled} AND NOT ${liveMember(sql`${due("now")}`)} ORDER BY ${w.dueAt} LIMIT ${due("n")})`,
    )
    .returning({ ...SUBSCRIPTION, reach }),
);

/** A subscription as a claim returns it. */
export type Claimed = ResultOf<typeof claimDue>[number];

/** What a turn leaves of a subscription: its place, its head's failed attempts and retry time, and the outcome of its last attempts. */
export interface Release {
  id: number;
  token: string;
  place: number;
  /** The turn did not send its stream (claimed at NULL): a place set meanwhile (a fan-out's, a re-type's) stays. */
  keepPlace: boolean;
  attempts: number;
  retryAt: string | null;
  now: string;
  /** When a subscription re-typed after its place looks again (its place cannot be NULL until the frontier passes the change). */
  recheckAt: string;
  /** A member's release in its range's close (`token` is the range's): written only when the row is claimed or `clean` is false. */
  member: boolean;
  /** The turn sent the whole range, each first attempt delivered, and changes nothing else. */
  clean: boolean;
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
/** Its place after the turn (before NULL is considered). */
const place = sql`CASE WHEN ${rel("keepPlace")} THEN coalesce(${w.place}, ${rel("place")}) ELSE ${rel("place")} END`;
/** Every attempt failed for long enough: the subscription is disabled. */
const disable = sql`(${rel("lastOk")} = 0 AND coalesce(${w.failingSince}, ${rel("failedAt")}) <= ${rel("disableBefore")})`;
/** When its stream is next due: its head's retry; now while it is behind the reach; later while its re-type is ahead; else never. */
const stream = sql`CASE WHEN ${rel("attempts")} > 0 THEN ${rel("retryAt")} WHEN ${place} < ${reach} THEN ${rel("now")}
  WHEN ${w.typesSince} > ${place} THEN ${rel("recheckAt")} END`;
const redelivery = sql`(SELECT min(${r.nextAttemptAt}) FROM ${r} WHERE ${r.webhookId} = ${w.id})`;
/** Claimed by `token`, or a member of its range that must be written. */
const held = sql`(${w.leaseToken} = ${rel("token")} OR (${rel("member")} AND NOT ${rel("clean")} AND ${w.leaseToken} IS NULL AND ${heldRange(sql`${rel("token")}`)}))`;
/** The end of `token`'s claim (or a member's share of its range): next place (NULL: caught up), due time, status; none if another claim or delete won. */
export const release = plan({
  subscription: rel.statement(
    qb
      .update(w)
      .set({
        place: sql`CASE WHEN ${rel("attempts")} = 0 AND ${place} >= ${reach} AND ${w.typesSince} <= ${place} THEN NULL ELSE ${place} END`,
        attempts: sql`${rel("attempts")}`,
        retryAt: sql`${rel("retryAt")}`,
        dueAt: sql`CASE WHEN ${disable} OR NOT ${w.enabled} THEN NULL ELSE min(coalesce(${stream}, ${redelivery}), coalesce(${redelivery}, ${stream})) END`,
        leaseToken: null,
        failingSince: sql`CASE WHEN ${rel("lastOk")} = 1 THEN NULL WHEN ${rel("failedAt")} IS NOT NULL THEN coalesce(${w.failingSince}, ${rel("failedAt")}) ELSE ${w.failingSince} END`,
        enabled: sql`CASE WHEN ${disable} THEN 0 ELSE ${w.enabled} END`,
        status: sql`CASE WHEN ${disable} THEN 'disabled' ELSE coalesce(${rel("status")}, ${w.status}) END`,
      })
      .where(and(eq(w.id, rel("id")), held)),
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
