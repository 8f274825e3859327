/** A subscription's delivery log (docs/api.md#events-and-webhooks) and its retention; each status is its own range of the log's key. */
import { and, eq, getTableColumns, gt, lt, sql } from "drizzle-orm";
import { alias, unionAll } from "drizzle-orm/sqlite-core";
import { qb, type Database } from "../../db/client";
import { execute, params, plan, read, runEach, withValues, type PlanResults } from "../../db/plan";
import { webhookDeliveries, webhooks } from "../../db/schema";
import { variants } from "../../db/variants";
import { NotFound } from "../../domain/errors";
import { DELIVERY_ERRORS, DELIVERY_STATUSES, type DeliveryStatus, type WebhookDelivery } from "../../domain/webhooks";
import { logRangeDelete, subscriptionExists } from "./subscriptions";

const d = webhookDeliveries;

/** Every column of an entry, its event before its status. */
const { webhookId, status, eventId, eventType, ...attempt } = getTableColumns(d);
const LOG_COLUMNS = { webhookId, eventId, eventType, status, ...attempt };

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
  const ranges = DELIVERY_STATUSES.map((status) => qb.select().from(inStatus(status).as(`log_${status}`)));
  return unionAll(ranges[0]!, ranges[1]!, ranges[2]!).orderBy(sql`event_id`).limit(p("limit"));
}

/** Whether the subscription exists, and its entries with event id > `afterEventId` (in `status` when `byStatus`), in one snapshot. */
const logPage = variants((byStatus: boolean) =>
  plan({ subscription: subscriptionExists(p), deliveries: p.statement(byStatus ? inStatus(undefined) : everyStatus()) }),
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

/** Delivered and given-up deliveries are kept this long, ms (docs/api.md#events-and-webhooks: 7 days). */
export const DELIVERY_RETENTION_MS = 7 * 24 * 3600 * 1000;
/** Deliveries that finished before the returned instant are pruned at `now`. */
export const retentionStart = (now: Date): Date => new Date(now.getTime() - DELIVERY_RETENTION_MS);

/** Finished entries deleted per statement at most. */
const PRUNE_BATCH = 500;
const young = alias(webhookDeliveries, "y");
const finished = params<{ finishedBefore: string }>();

/** Per subscription and finished status: the oldest entry, and the first (by event) finished at or after `finishedBefore`, where pruning stops. */
const pruneBounds = finished.prepare(
  qb
    .select({
      webhookId: sql<number>`${webhooks.id}`,
      status: sql<"delivered" | "failed">`s.status`,
      oldest: sql<number | null>`(SELECT min(${d.eventId}) FROM ${d} WHERE ${d.webhookId} = ${webhooks.id} AND ${d.status} = s.status)`,
      bound: sql<number | null>`(SELECT ${young.eventId} FROM ${d} ${young}
        WHERE ${young.webhookId} = ${webhooks.id} AND ${young.status} = s.status AND ${young.finishedAt} >= ${finished("finishedBefore")}
        ORDER BY ${young.eventId} LIMIT 1)`,
    })
    .from(sql`${webhooks} CROSS JOIN (SELECT 'delivered' AS status UNION ALL SELECT 'failed') AS s`),
);

/** Up to `PRUNE_BATCH` entries of one subscription and status before event `before`. */
const rangeP = params<{ webhookId: number; status: DeliveryStatus; before: number }>();
const pruneRange = plan({ entries: rangeP.statement(logRangeDelete(rangeP("webhookId"), rangeP("status"), PRUNE_BATCH, lt(d.eventId, rangeP("before")))) });

/** Delete finished entries before the first (per subscription and status) finished at or after `finishedBefore`, in ≤ `maxRounds` rounds: how many. */
export async function pruneFinishedDeliveries(db: Database, finishedBefore: Date, maxRounds: number): Promise<number> {
  let deleted = 0;
  for (let round = 0; round < maxRounds; round++) {
    const bounds = await execute(db, pruneBounds, { finishedBefore: finishedBefore.toISOString() });
    const due = bounds.filter((b) => b.oldest !== null && b.oldest < (b.bound ?? Number.MAX_SAFE_INTEGER));
    if (due.length === 0) break;
    const results = await runEach(
      db,
      due.map((b) => withValues(pruneRange, { webhookId: b.webhookId, status: b.status, before: b.bound ?? Number.MAX_SAFE_INTEGER })),
    );
    const counts = results.map((r) => r.entries.rowsAffected);
    deleted += counts.reduce((a, b) => a + b, 0);
    if (counts.every((n) => n < PRUNE_BATCH)) break;
  }
  return deleted;
}
