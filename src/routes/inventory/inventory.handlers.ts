/** Handlers of /store/inventory. */
import type { RouteHandler } from "@hono/zod-openapi";
import { INVENTORY_LIST_TAG, inventoryTag } from "../../http/cache-tags";
import { ifMatchPrecondition, setCacheTags, setEtag } from "../../http/caching";
import type { AppEnv } from "../../http/context";
import { decodeCursor, DEFAULT_PAGE_SIZE, pageOf } from "../../http/pagination";
import * as service from "../../services/inventory.service";
import type * as routes from "./inventory.routes";

export const list: RouteHandler<typeof routes.list, AppEnv> = async (c) => {
  const { status, petId, limit = DEFAULT_PAGE_SIZE, cursor } = c.req.valid("query");
  const rows = await service.listInventory(c.get("db"), { status, petIds: petId }, decodeCursor(cursor), limit + 1);
  const items = pageOf(c, rows, limit, (item) => item.petId);
  setCacheTags(c, [INVENTORY_LIST_TAG, ...items.map((item) => inventoryTag(item.petId))]);
  setEtag(c, items);
  return c.json(items, 200);
};

export const get: RouteHandler<typeof routes.get, AppEnv> = async (c) => {
  const item = await service.getInventoryItem(c.get("db"), c.req.valid("param").petId);
  setCacheTags(c, [inventoryTag(item.petId)]);
  setEtag(c, item);
  return c.json(item, 200);
};

export const replace: RouteHandler<typeof routes.replace, AppEnv> = async (c) => {
  const { petId } = c.req.valid("param");
  const item = await service.setInventory(c.get("db"), {
    petId,
    quantity: c.req.valid("json").quantity,
    expected: ifMatchPrecondition(c.req.valid("header")["if-match"]),
    now: c.get("now")(),
  });
  setEtag(c, item);
  return c.json(item, 200);
};
