/** Handlers of /store/inventory. */
import type { RouteHandler } from "@hono/zod-openapi";
import { INVENTORY_LIST_TAG, inventoryTag } from "../../http/cache-tags";
import { ifMatchPrecondition, withEtag } from "../../http/caching";
import type { AppEnv } from "../../http/context";
import { decodeCursor, DEFAULT_PAGE_SIZE, pageOf } from "../../http/pagination";
import * as service from "../../services/inventory.service";
import type * as routes from "./inventory.routes";

export const list: RouteHandler<typeof routes.list, AppEnv> = async (c) => {
  const { status, petId, limit = DEFAULT_PAGE_SIZE, cursor } = c.req.valid("query");
  const rows = await service.listInventory(c.get("db"), { status, petIds: petId }, decodeCursor(cursor), limit + 1);
  const items = pageOf(c, rows, limit, (item) => item.petId);
  return c.json(withEtag(c, items, [INVENTORY_LIST_TAG, ...items.map((item) => inventoryTag(item.petId))]), 200);
};

export const get: RouteHandler<typeof routes.get, AppEnv> = async (c) => {
  const item = await service.getInventoryItem(c.get("db"), c.req.valid("param").petId);
  return c.json(withEtag(c, item, [inventoryTag(item.petId)]), 200);
};

export const replace: RouteHandler<typeof routes.replace, AppEnv> = async (c) => {
  const { petId } = c.req.valid("param");
  const expected = ifMatchPrecondition(c.req.valid("header")["if-match"]);
  const item = await service.setInventory(c.get("db"), { petId, quantity: c.req.valid("json").quantity, expected, now: c.get("now")() });
  return c.json(withEtag(c, item), 200);
};
