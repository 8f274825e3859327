/**
 * `Idempotency-Key` on authenticated POSTs (API.md §4) of POST /pets and
 * POST /categories, through the one idempotency module
 * (src/services/idempotency.service.ts: fingerprint, claim timeout, messages,
 * SQL). POST /store/orders claims the key inside its single order batch
 * (src/services/orders/place.ts), with the same module. POSTs whose
 * response carries a secret (API keys, webhook signing secrets) do not
 * replay: a secret is shown once, so there the header is ignored and a retry
 * creates another one.
 *
 * The fingerprint's body is the JSON value sent (whitespace and key order do
 * not matter; a body that is not JSON counts as its text, and is refused by
 * the route anyway). Costs 2 round trips beyond the request's own (claim,
 * then store or release).
 */
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../lib/context";
import { ApiError } from "../lib/errors";
import { claimKey, recordResponse, releaseClaim, requestFingerprint } from "../services/idempotency.service";

/** The POSTs this middleware makes idempotent. */
const REPLAYABLE = new Set(["/pets", "/categories"]);

/** Global middleware, after authentication. */
export const idempotency = createMiddleware<AppEnv>(async (c, next) => {
  const key = c.req.header("Idempotency-Key");
  const principal = c.get("principal");
  if (c.req.method !== "POST" || key === undefined || !principal || !REPLAYABLE.has(c.req.path)) return next();
  if (key.length < 1 || key.length > 255) {
    throw new ApiError(400, "validation_error", "The request is invalid; see details.", [
      { path: "header.idempotency-key", message: "Idempotency-Key must be 1 to 255 characters." },
    ]);
  }
  const db = c.get("db");
  const now = c.get("now")();
  const fingerprint = await requestFingerprint(c.req.method, c.req.path, jsonValue(await c.req.text()));
  const stored = await claimKey(db, { accountId: principal.accountId, key, method: c.req.method, path: c.req.path, fingerprint, now });
  if (stored) {
    return c.body(stored.body, stored.status as 201, { ...stored.headers, "Content-Type": "application/json; charset=utf-8", "Idempotent-Replayed": "true" });
  }
  await next();
  const res = c.res;
  if (res.status >= 200 && res.status < 300) {
    const location = res.headers.get("Location");
    await recordResponse(db, principal.accountId, key, { status: res.status, body: await res.clone().text(), headers: location ? { Location: location } : {} });
  } else {
    await releaseClaim(db, principal.accountId, key);
  }
});

/** The JSON value of a body, or its text when it is not JSON. */
function jsonValue(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
