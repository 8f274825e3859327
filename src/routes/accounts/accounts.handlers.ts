/** Handlers of /accounts. */
import type { RouteHandler } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/context";
import { caller } from "../../middleware/auth";
import { decodeCursor, DEFAULT_PAGE_SIZE, pageOf } from "../../http/pagination";
import { replayed } from "../../middleware/idempotency";
import * as service from "../../services/accounts.service";
import { sha256Hex } from "../../services/api-keys";
import type * as routes from "./accounts.routes";
import { DEFAULT_KEY_NAME } from "./accounts.schemas";

export const signUp: RouteHandler<typeof routes.signUp, AppEnv> = async (c) => {
  const result = await service.createAccount(c.get("db"), c.req.valid("json"), "customer", c.get("now")());
  c.get("keyCache").rememberKey(await sha256Hex(result.apiKey.key));
  c.header("Location", "/accounts/me");
  return c.json(result, 201);
};

export const me: RouteHandler<typeof routes.me, AppEnv> = async (c) => {
  return c.json(await service.getAccount(c.get("db"), caller(c).accountId), 200);
};

export const listKeys: RouteHandler<typeof routes.listKeys, AppEnv> = async (c) => {
  const { limit = DEFAULT_PAGE_SIZE, cursor } = c.req.valid("query");
  return c.json(pageOf(c, await service.listKeys(c.get("db"), caller(c).accountId, decodeCursor(cursor), limit + 1), limit), 200);
};

export const createKey: RouteHandler<typeof routes.createKey, AppEnv> = async (c) => {
  // The body is optional, and an absent one is not validated: the schema's default does not apply then.
  const name = c.req.valid("json").name ?? DEFAULT_KEY_NAME;
  const { created, replay } = await service.createKeyOnce(c.get("db"), caller(c).accountId, name, c.get("now")(), c.get("keyClaim"));
  if (replay) return c.json(replayed<service.ApiKey>(c, replay), 200);
  c.get("keyCache").rememberKey(await sha256Hex(created.key));
  return c.json(created, 201);
};

export const revokeKey: RouteHandler<typeof routes.revokeKey, AppEnv> = async (c) => {
  const { keyId } = c.req.valid("param");
  await service.revokeKey(c.get("db"), caller(c).accountId, keyId, c.get("now")());
  c.get("keyCache").forget(keyId);
  return c.body(null, 204);
};
