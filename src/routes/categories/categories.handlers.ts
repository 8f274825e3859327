/** Handlers of /categories. */
import type { RouteHandler } from "@hono/zod-openapi";
import type { Category } from "../../services/categories.service";
import { CATEGORIES_LIST_TAG, categoryTag } from "../../http/cache-tags";
import { ifMatchPrecondition, withEtag } from "../../http/caching";
import type { AppEnv } from "../../http/context";
import { decodeCursor, DEFAULT_PAGE_SIZE, pageOf } from "../../http/pagination";
import { replayed } from "../../middleware/idempotency";
import * as service from "../../services/categories.service";
import type * as routes from "./categories.routes";

export const list: RouteHandler<typeof routes.list, AppEnv> = async (c) => {
  const { limit = DEFAULT_PAGE_SIZE, cursor } = c.req.valid("query");
  const items = pageOf(c, await service.listCategories(c.get("db"), decodeCursor(cursor), limit + 1), limit);
  return c.json(withEtag(c, items, [CATEGORIES_LIST_TAG, ...items.map((category) => categoryTag(category.id))]), 200);
};

export const create: RouteHandler<typeof routes.create, AppEnv> = async (c) => {
  const { created: category, replay } = await service.createCategoryOnce(c.get("db"), c.req.valid("json"), c.get("now")(), c.get("keyClaim"));
  if (replay) return c.json(replayed<Category>(c, replay), 201);
  c.header("Location", `/categories/${category.id}`);
  return c.json(category, 201);
};

export const get: RouteHandler<typeof routes.get, AppEnv> = async (c) => {
  const category = await service.getCategory(c.get("db"), c.req.valid("param").categoryId);
  return c.json(withEtag(c, category, [categoryTag(category.id)]), 200);
};

export const patch: RouteHandler<typeof routes.patch, AppEnv> = async (c) => {
  const { categoryId } = c.req.valid("param");
  const expected = ifMatchPrecondition(c.req.valid("header")["if-match"]);
  const category = await service.updateCategory(c.get("db"), { categoryId, patch: c.req.valid("json"), expected, now: c.get("now")() });
  return c.json(withEtag(c, category), 200);
};

export const remove: RouteHandler<typeof routes.remove, AppEnv> = async (c) => {
  const expected = ifMatchPrecondition(c.req.valid("header")["if-match"]);
  await service.deleteCategory(c.get("db"), c.req.valid("param").categoryId, expected, c.get("now")());
  return c.body(null, 204);
};
