/** Handlers of /webhooks. */
import type { RouteHandler } from "@hono/zod-openapi";
import type { Webhook } from "../../domain/webhooks";
import type { AppEnv } from "../../http/context";
import { decodeCursor, DEFAULT_PAGE_SIZE, setNextLink, toPage } from "../../http/pagination";
import { listDeliveries } from "../../services/webhooks/delivery-log";
import { replayed } from "../../middleware/idempotency";
import * as service from "../../services/webhooks/subscriptions";
import type * as routes from "./webhooks.routes";

export const create: RouteHandler<typeof routes.create, AppEnv> = async (c) => {
  const { created, replay } = await service.createWebhook(c.get("db"), c.req.valid("json"), {
    allowPrivateTargets: c.get("config").webhooks.allowPrivateTargets,
    now: c.get("now")(),
    claim: c.get("keyClaim"),
  });
  if (replay) return c.json(replayed<Webhook>(c, replay), 200);
  c.header("Location", `/webhooks/${created.webhook.id}`);
  return c.json({ ...created.webhook, secret: created.secret }, 201);
};

export const list: RouteHandler<typeof routes.list, AppEnv> = async (c) => {
  const { limit = DEFAULT_PAGE_SIZE, cursor } = c.req.valid("query");
  const page = toPage(await service.listWebhooks(c.get("db"), decodeCursor(cursor), limit + 1), limit);
  setNextLink(c, page.nextCursor);
  return c.json(page.items, 200);
};

export const get: RouteHandler<typeof routes.get, AppEnv> = async (c) => {
  return c.json(await service.getWebhook(c.get("db"), c.req.valid("param").webhookId), 200);
};

export const remove: RouteHandler<typeof routes.remove, AppEnv> = async (c) => {
  await service.deleteWebhook(c.get("db"), c.req.valid("param").webhookId);
  return c.body(null, 204);
};

export const deliveries: RouteHandler<typeof routes.deliveries, AppEnv> = async (c) => {
  const { webhookId } = c.req.valid("param");
  const { limit = DEFAULT_PAGE_SIZE, cursor, status } = c.req.valid("query");
  const rows = await listDeliveries(c.get("db"), { webhookId, afterEventId: decodeCursor(cursor), limit: limit + 1, status });
  const page = toPage(rows, limit, (delivery) => delivery.eventId);
  setNextLink(c, page.nextCursor);
  return c.json(page.items, 200);
};
