/** A subscription's delivery log (docs/api.md#events-and-webhooks): its deliveries and their attempts, as `GET /webhooks/{id}/deliveries` shows them. */
import { and, eq, gt } from "drizzle-orm";
import { qb, type Database } from "../../db/client";
import { params, plan, read, type PlanResults } from "../../db/plan";
import { events as eventLog, webhookDeliveries, webhooks } from "../../db/schema";
import { variants } from "../../db/variants";
import { NotFound } from "../../domain/errors";
import { DELIVERY_ERRORS, type DeliveryStatus, type WebhookDelivery } from "../../domain/webhooks";

const d = webhookDeliveries;

/** The columns of a delivery log entry. */
const LOG_COLUMNS = {
  id: d.id,
  webhookId: d.webhookId,
  eventId: d.eventId,
  eventType: eventLog.type,
  status: d.status,
  attempts: d.attempts,
  nextAttemptAt: d.nextAttemptAt,
  lastAttemptAt: d.lastAttemptAt,
  lastStatusCode: d.lastStatusCode,
  lastError: d.lastError,
  deliveredAt: d.deliveredAt,
};

/** Whether the subscription exists, and its deliveries with event id > `afterEventId` (in `status` when `byStatus`), in one snapshot, by an index. */
const p = params<Omit<DeliveryPage, "status"> & { status: DeliveryStatus | null }>();
const logPage = variants((byStatus: boolean) =>
  plan({
    subscription: p.statement(
      qb
        .select({ id: webhooks.id })
        .from(webhooks)
        .where(eq(webhooks.id, p("webhookId"))),
    ),
    deliveries: p.statement(
      qb
        .select(LOG_COLUMNS)
        .from(d)
        .innerJoin(eventLog, eq(eventLog.id, d.eventId))
        .where(and(eq(d.webhookId, p("webhookId")), byStatus ? eq(d.status, p("status")) : undefined, gt(d.eventId, p("afterEventId"))))
        .orderBy(d.eventId)
        .limit(p("limit")),
    ),
  }),
);

type DeliveryRow = PlanResults<ReturnType<typeof logPage>["steps"]>["deliveries"][number];

function toDelivery(row: DeliveryRow): WebhookDelivery {
  const out: WebhookDelivery = {
    id: row.id,
    webhookId: row.webhookId,
    eventId: row.eventId,
    eventType: row.eventType,
    status: row.status,
    attempts: row.attempts,
  };
  if (out.status === "pending") out.nextAttemptAt = row.nextAttemptAt;
  if (row.lastAttemptAt !== null) out.lastAttemptAt = row.lastAttemptAt;
  if (row.lastStatusCode !== null) out.lastStatusCode = row.lastStatusCode;
  const lastError = DELIVERY_ERRORS.find((error) => error === row.lastError);
  if (lastError !== undefined) out.lastError = lastError;
  if (row.deliveredAt !== null) out.deliveredAt = row.deliveredAt;
  return out;
}

/** Which page of a delivery log: deliveries with event id > `afterEventId`, at most `limit`, only in `status` when given. */
export interface DeliveryPage {
  webhookId: number;
  afterEventId: number;
  limit: number;
  status?: DeliveryStatus;
}

/** A page of a subscription's deliveries, ascending by event id (so by id). One round trip. @throws NotFound when the subscription does not exist. */
export async function listDeliveries(db: Database, page: DeliveryPage): Promise<WebhookDelivery[]> {
  const { subscription, deliveries } = await read(db, logPage(page.status !== undefined), { ...page, status: page.status ?? null });
  if (subscription.length === 0) throw new NotFound("webhook", page.webhookId);
  return deliveries.map(toDelivery);
}
