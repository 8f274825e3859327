/** Handlers of /webhooks. */
import type { RouteHandler } from "@hono/zod-openapi";
import type { Webhook } from "../../domain/webhooks";
import type { AppEnv } from "../../http/context";
import { decodeCursor, DEFAULT_PAGE_SIZE, pageOf } from "../../http/pagination";
import { listDeliveries } from "../../services/webhooks/delivery-log";
import { replayed } from "../../middleware/idempotency";
import * as service from "../../services/webhooks/subscriptions";
import { rotateWebhookSecret, updateWebhook } from "../../services/webhooks/manage";
import { recoverSince, resendEvent, sendTestEvent } from "../../services/webhooks/redeliver";
import type * as routes from "./webhooks.routes";

export const create: RouteHandler<typeof routes.create, AppEnv> = async (c) => {
  const { allowPrivateTargets, maxSubscriptions: max } = c.get("config").webhooks;
  const options = { allowPrivateTargets, now: c.get("now")(), max, claim: c.get("keyClaim") };
  const { created, replay } = await service.createWebhook(c.get("db"), c.req.valid("json"), options);
  if (replay) return c.json(replayed<Webhook>(c, replay), 200);
  c.get("subscriptionsChanged")();
  c.header("Location", `/webhooks/${created.webhook.id}`);
  return c.json({ ...created.webhook, secret: created.secret }, 201);
};

export const list: RouteHandler<typeof routes.list, AppEnv> = async (c) => {
  const { limit = DEFAULT_PAGE_SIZE, cursor } = c.req.valid("query");
  return c.json(pageOf(c, await service.listWebhooks(c.get("db"), decodeCursor(cursor), limit + 1), limit), 200);
};

export const get: RouteHandler<typeof routes.get, AppEnv> = async (c) => {
  return c.json(await service.getWebhook(c.get("db"), c.req.valid("param").webhookId), 200);
};

export const remove: RouteHandler<typeof routes.remove, AppEnv> = async (c) => {
  await service.deleteWebhook(c.get("db"), c.req.valid("param").webhookId);
  c.get("subscriptionsChanged")();
  return c.body(null, 204);
};

export const deliveries: RouteHandler<typeof routes.deliveries, AppEnv> = async (c) => {
  const { webhookId } = c.req.valid("param");
  const { limit = DEFAULT_PAGE_SIZE, cursor, status } = c.req.valid("query");
  // Event 0 (the latest webhook.test) comes first: a page without a cursor starts below it.
  const afterEventId = cursor === undefined ? -1 : decodeCursor(cursor);
  const rows = await listDeliveries(c.get("db"), { webhookId, afterEventId, limit: limit + 1, status });
  const page = pageOf(c, rows, limit, (delivery) => delivery.eventId);
  return c.json(page, 200);
};

export const update: RouteHandler<typeof routes.update, AppEnv> = async (c) => {
  const { allowPrivateTargets } = c.get("config").webhooks;
  const change = c.req.valid("json");
  const webhook = await updateWebhook(c.get("db"), c.req.valid("param").webhookId, change, { allowPrivateTargets, now: c.get("now")() });
  c.get("subscriptionsChanged")();
  if (change.enabled === true) c.get("dispatchSoon")(c);
  return c.json(webhook, 200);
};

export const rotate: RouteHandler<typeof routes.rotate, AppEnv> = async (c) => {
  const body = (c.req.header("Content-Length") === "0" || !c.req.header("Content-Type") ? {} : c.req.valid("json")) as { secret?: string };
  const { webhook, secret } = await rotateWebhookSecret(c.get("db"), c.req.valid("param").webhookId, body.secret, c.get("now")());
  return c.json({ ...webhook, secret }, 200);
};

export const resend: RouteHandler<typeof routes.resend, AppEnv> = async (c) => {
  const { webhookId, eventId } = c.req.valid("param");
  const delivery = await resendEvent(c.get("db"), webhookId, eventId, c.get("now")(), c.get("config").webhooks.maxRedeliveries);
  c.get("dispatchSoon")(c);
  return c.json(delivery, 202);
};

export const recover: RouteHandler<typeof routes.recover, AppEnv> = async (c) => {
  const { webhookId } = c.req.valid("param");
  const queued = await recoverSince(c.get("db"), webhookId, new Date(c.req.valid("json").since), c.get("now")(), c.get("config").webhooks.maxRedeliveries);
  if (queued > 0) c.get("dispatchSoon")(c);
  return c.json({ queued }, 202);
};

export const test: RouteHandler<typeof routes.test, AppEnv> = async (c) => {
  const delivery = await sendTestEvent(c.get("db"), c.req.valid("param").webhookId, c.get("now")(), c.get("config").webhooks.maxRedeliveries);
  c.get("dispatchSoon")(c);
  return c.json(delivery, 202);
};
