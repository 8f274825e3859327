/**
 * A subscription's delivery log (API.md §6): its (subscription, event)
 * deliveries and their attempts so far, as `GET /webhooks/{id}/deliveries` shows them.
 */
import { and, eq, gt, sql } from "drizzle-orm";
import { qb, type Database } from "../../db/client";
import { plan, read, statement, type PlanResults } from "../../db/plan";
import { events as eventLog, webhookDeliveries, webhooks } from "../../db/schema";
import { notFound } from "../../lib/errors";
import type { EventType } from "../events.service";
import { DELIVERY_ERRORS, type DeliveryError } from "./delivery";

export type DeliveryStatus = "pending" | "delivered" | "failed";

/** One (subscription, event) delivery and its attempts so far. */
export interface WebhookDelivery {
  id: number;
  webhookId: number;
  eventId: number;
  eventType: EventType;
  status: DeliveryStatus;
  attempts: number;
  /** While pending: when the next attempt is due. */
  nextAttemptAt?: string;
  lastAttemptAt?: string;
  /** HTTP status of the last attempt's response (absent when no response was received). */
  lastStatusCode?: number;
  /** Coarse reason of the last failed attempt (never raw error text). */
  lastError?: DeliveryError;
  deliveredAt?: string;
}

const d = webhookDeliveries;

/** Whether the subscription exists, and its deliveries after `afterId` (in `status` unless that is NULL), in one snapshot. */
const logPage = plan({
  subscription: statement(
    qb
      .select({ id: webhooks.id })
      .from(webhooks)
      .where(eq(webhooks.id, sql.placeholder("webhookId")))
      .prepare(),
  ),
  deliveries: statement(
    qb
      .select({
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
      })
      .from(d)
      .innerJoin(eventLog, eq(eventLog.id, d.eventId))
      .where(
        and(
          eq(d.webhookId, sql.placeholder("webhookId")),
          gt(d.id, sql.placeholder("afterId")),
          sql`(${sql.placeholder("status")} IS NULL OR ${d.status} = ${sql.placeholder("status")})`,
        ),
      )
      .orderBy(d.id)
      .limit(sql.placeholder("limit"))
      .prepare(),
  ),
});

type DeliveryRow = PlanResults<typeof logPage.steps>["deliveries"][number];

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

/** Which page of a delivery log: deliveries with id > `afterId`, at most `limit`, only in `status` when given. */
export interface DeliveryPage {
  webhookId: number;
  afterId: number;
  limit: number;
  status?: DeliveryStatus;
}

/**
 * A page of a subscription's deliveries, ascending by id (i.e. in event order). One round trip.
 * @throws ApiError 404 when the subscription does not exist.
 */
export async function listDeliveries(db: Database, page: DeliveryPage): Promise<WebhookDelivery[]> {
  const { subscription, deliveries } = await read(db, logPage, { ...page, status: page.status ?? null });
  if (subscription.length === 0) throw notFound("Webhook", page.webhookId);
  return deliveries.map(toDelivery);
}
