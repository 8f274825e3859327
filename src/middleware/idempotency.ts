/** `Idempotency-Key` at the HTTP edge (docs/api.md#idempotency-key): the claim (`keyClaim`) of a POST that honours it, and replays. */
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { StoredResponse } from "../domain/idempotency";
import type { AppEnv } from "../http/context";
import { ApiError } from "../http/errors";
import { newClaimToken, requestFingerprint } from "../services/idempotency.service";
import { WRITE_METHODS } from "./after-writes";

/** The POSTs whose service honours `keyClaim`. */
const HONOURING = new Set(["/pets", "/categories", "/accounts/me/keys", "/webhooks"]);

/** The POST that honours Idempotency-Key in its own batch (src/services/orders/place.ts). */
const ORDERS = "/store/orders";

function headerError(message: string): ApiError {
  return new ApiError(400, "validation_error", "The request is invalid; see details.", [{ path: "header.idempotency-key", message }]);
}

/** Global middleware, after authentication. @throws ApiError 400 `validation_error` for the header where not honoured or over 255 characters. */
export const idempotency = createMiddleware<AppEnv>(async (c, next) => {
  const key = c.req.header("Idempotency-Key");
  if (key === undefined || !WRITE_METHODS.has(c.req.method)) return next();
  const honoured = c.req.method === "POST" && (HONOURING.has(c.req.path) || c.req.path === ORDERS);
  if (!honoured) {
    throw headerError(
      `${c.req.method} ${c.req.path} does not honour Idempotency-Key; only POST /pets, /categories, /store/orders, /accounts/me/keys and /webhooks do.`,
    );
  }
  const principal = c.get("principal");
  if (c.req.path === ORDERS || !principal) return next();
  if (key.length < 1 || key.length > 255) throw headerError("Idempotency-Key must be 1 to 255 characters.");
  const { method, path } = c.req;
  const fingerprint = await requestFingerprint(method, path, jsonValue(await c.req.text()));
  c.set("keyClaim", { accountId: principal.accountId, key, method, path, fingerprint, token: newClaimToken(), now: c.get("now")() });
  return next();
});

/** Answer a replay: sets the stored headers and `Idempotent-Replayed: true` on `c`; returns the stored body, parsed, for `c.json(body, stored.status)`. */
export function replayed<T>(c: Context<AppEnv>, stored: StoredResponse): T {
  for (const [name, value] of Object.entries(stored.headers)) c.header(name, value);
  c.header("Idempotent-Replayed", "true");
  return JSON.parse(stored.body) as T;
}

function jsonValue(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
