/**
 * A subscription's delivery log (docs/api.md#events-and-webhooks): one entry per (subscription, event) from its first attempt, as
 * `GET /webhooks/{id}/deliveries` shows it, and its retention. Each status is its own range of the log's key.
 */
import { and, eq, gt, sql } from "drizzle-orm";
import { alias, unionAll } from "drizzle-orm/sqlite-core";
import { qb, type Database } from "../../db/client";
import { params, plan, read, type PlanResults } from "../../db/plan";
import { webhookDeliveries, webhooks } from "../../db/schema";
import { variants } from "../../db/variants";
import { NotFound } from "../../domain/errors";
import { DELIVERY_ERRORS, type DeliveryStatus, type WebhookDelivery } from "../../domain/webhooks";

const d = webhookDeliveries;

/** The columns of a delivery log entry. */
const LOG_COLUMNS = {
  webhookId: d.webhookId,
  eventId: d.eventId,
  eventType: d.eventType,
  status: d.status,
  attempts: d.attempts,
  nextAttemptAt: d.nextAttemptAt,
  lastAttemptAt: d.lastAttemptAt,
  lastStatusCode: d.lastStatusCode,
  lastError: d.lastError,
  finishedAt: d.finishedAt,
};

const p = params<Omit<DeliveryPage, "status"> & { status: DeliveryStatus | null }>();

/** The page's entries in one status (`status` given, or this one): a range of the key. */
function inStatus(status: DeliveryStatus | undefined) {
  return qb
    .select(LOG_COLUMNS)
    .from(d)
    .where(and(eq(d.webhookId, p("webhookId")), eq(d.status, status ?? p("status")), gt(d.eventId, p("afterEventId"))))
    .orderBy(d.eventId)
    .limit(p("limit"));
}

/** Every status: the three ranges, each limited, merged in event order. */
function everyStatus() {
  const ranges = (["pending", "delivered", "failed"] as const).map((status) => qb.select().from(inStatus(status).as(`log_${status}`)));
  return unionAll(ranges[0]!, ranges[1]!, ranges[2]!).orderBy(sql`event_id`).limit(p("limit"));
}

/** Whether the subscription exists, and its entries with event id > `afterEventId` (in `status` when `byStatus`), in one snapshot. */
const logPage = variants((byStatus: boolean) =>
  plan({
    subscription: p.statement(
      qb
        .select({ id: webhooks.id })
        .from(webhooks)
        .where(eq(webhooks.id, p("webhookId"))),
    ),
    deliveries: p.statement(byStatus ? inStatus(undefined) : everyStatus()),
  }),
);

type DeliveryRow = PlanResults<ReturnType<typeof logPage>["steps"]>["deliveries"][number];

function toDelivery(row: DeliveryRow): WebhookDelivery {
  const out: WebhookDelivery = {
    webhookId: row.webhookId,
    eventId: row.eventId,
    eventType: row.eventType as WebhookDelivery["eventType"],
    status: row.status,
    attempts: row.attempts,
  };
  if (row.status === "pending" && row.nextAttemptAt !== null) out.nextAttemptAt = row.nextAttemptAt;
  out.lastAttemptAt = row.lastAttemptAt;
  if (row.lastStatusCode !== null) out.lastStatusCode = row.lastStatusCode;
  const lastError = DELIVERY_ERRORS.find((error) => error === row.lastError);
  if (lastError !== undefined) out.lastError = lastError;
  if (row.status === "delivered" && row.finishedAt !== null) out.deliveredAt = row.finishedAt;
  return out;
}

/** Which page of a delivery log: entries with event id > `afterEventId`, at most `limit`, only in `status` when given. */
export interface DeliveryPage {
  webhookId: number;
  afterEventId: number;
  limit: number;
  status?: DeliveryStatus;
}

/** A page of a subscription's deliveries, ascending by event id. One round trip. @throws NotFound when the subscription does not exist. */
export async function listDeliveries(db: Database, page: DeliveryPage): Promise<WebhookDelivery[]> {
  const { subscription, deliveries } = await read(db, logPage(page.status !== undefined), { ...page, status: page.status ?? null });
  if (subscription.length === 0) throw new NotFound("webhook", page.webhookId);
  return deliveries.map(toDelivery);
}

/** Finished entries deleted per statement at most. */
const PRUNE_BATCH = 500;
const old = alias(webhookDeliveries, "o");
const young = alias(webhookDeliveries, "y");
const finished = params<{ finishedBefore: string }>();

/**
 * Up to `PRUNE_BATCH` delivered or given-up entries that finished before `finishedBefore`: per subscription and status, those before the
 * first entry (in event order) that finished later, so each range is read up to its first young entry (CROSS JOIN keeps that order).
 */
export const pruneFinishedDeliveries = finished.prepare(
  qb.delete(d).where(
    sql`(${d.webhookId}, ${d.status}, ${d.eventId}) IN (
      SELECT ${old.webhookId}, ${old.status}, ${old.eventId}
      FROM ${webhooks} CROSS JOIN (SELECT 'delivered' AS status UNION ALL SELECT 'failed') AS s CROSS JOIN ${d} ${old}
      WHERE ${old.webhookId} = ${webhooks.id} AND ${old.status} = s.status AND ${old.eventId} < coalesce((
        SELECT ${young.eventId} FROM ${d} ${young}
        WHERE ${young.webhookId} = ${webhooks.id} AND ${young.status} = s.status AND ${young.finishedAt} >= ${finished("finishedBefore")}
        ORDER BY ${young.eventId} LIMIT 1), ${Number.MAX_SAFE_INTEGER})
      LIMIT ${PRUNE_BATCH})`,
  ),
);
