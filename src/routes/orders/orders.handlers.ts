/** Handlers of /store/orders. */
import type { RouteHandler } from "@hono/zod-openapi";
import { ifMatchPrecondition, withEtag } from "../../http/caching";
import type { AppEnv } from "../../http/context";
import { caller } from "../../middleware/auth";
import { decodeCursor, DEFAULT_PAGE_SIZE, pageOf } from "../../http/pagination";
import { cancelOrder } from "../../services/orders/cancel";
import { changeOrder } from "../../services/orders/change";
import { getOrder, listOrders } from "../../services/orders/list";
import { placeOrder } from "../../services/orders/place";
import type * as routes from "./orders.routes";

export const list: RouteHandler<typeof routes.list, AppEnv> = async (c) => {
  const { petId, complete, limit = DEFAULT_PAGE_SIZE, cursor } = c.req.valid("query");
  const rows = await listOrders(c.get("db"), caller(c), { filter: { petId, complete }, afterId: decodeCursor(cursor), limit: limit + 1 });
  const items = pageOf(c, rows, limit);
  return c.json(withEtag(c, items), 200);
};

export const create: RouteHandler<typeof routes.create, AppEnv> = async (c) => {
  const idempotencyKey = c.req.valid("header")["idempotency-key"];
  const placed = await placeOrder(c.get("db"), { principal: caller(c), input: c.req.valid("json"), idempotencyKey, now: c.get("now")() });
  c.header("Location", placed.location);
  if (placed.replayed) c.header("Idempotent-Replayed", "true");
  return c.json(placed.body, 201);
};

export const get: RouteHandler<typeof routes.get, AppEnv> = async (c) => {
  const order = await getOrder(c.get("db"), caller(c), c.req.valid("param").orderId);
  return c.json(withEtag(c, order), 200);
};

export const patch: RouteHandler<typeof routes.patch, AppEnv> = async (c) => {
  const { orderId } = c.req.valid("param");
  const expected = ifMatchPrecondition(c.req.valid("header")["if-match"]);
  const order = await changeOrder(c.get("db"), { principal: caller(c), orderId, change: c.req.valid("json"), expected, now: c.get("now")() });
  return c.json(withEtag(c, order), 200);
};

export const remove: RouteHandler<typeof routes.remove, AppEnv> = async (c) => {
  const { orderId } = c.req.valid("param");
  const expected = ifMatchPrecondition(c.req.valid("header")["if-match"]);
  await cancelOrder(c.get("db"), { principal: caller(c), orderId, expected, now: c.get("now")() });
  return c.body(null, 204);
};
