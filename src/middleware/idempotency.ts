/**
 * `Idempotency-Key` on the authenticated POSTs of /pets, /categories,
 * /accounts/me/keys and /webhooks (API.md §4), with the idempotency module
 * (src/services/idempotency.service.ts); POST /store/orders claims its key
 * inside its own batch (src/services/orders/place.ts). A replay of a POST whose
 * response carries a secret is `200` without it: the secret is never stored
 * nor shown twice. The fingerprint covers the JSON value of the body (key
 * order and whitespace do not matter). Costs 2 round trips (claim; store or release).
 * Every other POST, PUT, PATCH or DELETE refuses the header (docs/api.md).
 */
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../lib/context";
import { ApiError } from "../lib/errors";
import { claimKey, newClaimToken, recordResponse, releaseClaim, requestFingerprint } from "../services/idempotency.service";

/** The POSTs this middleware makes idempotent, each with the secret member its replay leaves out (null: none). */
const REPLAYABLE = new Map<string, string | null>([
  ["/pets", null],
  ["/categories", null],
  ["/accounts/me/keys", "key"],
  ["/webhooks", "secret"],
]);

/** The POST that honours Idempotency-Key in its own batch (src/services/orders/place.ts). */
const ORDERS = "/store/orders";

/** Methods whose request may change something (RFC 9110 §9.2.1: not safe). */
const WRITES = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/** 400 `validation_error` about the `Idempotency-Key` header. */
function headerError(message: string): ApiError {
  return new ApiError(400, "validation_error", "The request is invalid; see details.", [{ path: "header.idempotency-key", message }]);
}

/**
 * Global middleware, after authentication. A write that does not honour
 * Idempotency-Key refuses it (400 `validation_error`, docs/api.md) rather than
 * ignore it: a client must never believe a retry is safe when it is not.
 */
export const idempotency = createMiddleware<AppEnv>(async (c, next) => {
  const key = c.req.header("Idempotency-Key");
  if (key === undefined || !WRITES.has(c.req.method)) return next();
  const honoured = c.req.method === "POST" && (REPLAYABLE.has(c.req.path) || c.req.path === ORDERS);
  if (!honoured) {
    throw headerError(
      `${c.req.method} ${c.req.path} does not honour Idempotency-Key; only POST /pets, /categories, /store/orders, /accounts/me/keys and /webhooks do.`,
    );
  }
  const principal = c.get("principal");
  if (c.req.path === ORDERS || !principal) return next();
  if (key.length < 1 || key.length > 255) throw headerError("Idempotency-Key must be 1 to 255 characters.");
  const db = c.get("db");
  const now = c.get("now")();
  const fingerprint = await requestFingerprint(c.req.method, c.req.path, jsonValue(await c.req.text()));
  const token = newClaimToken();
  const stored = await claimKey(db, { accountId: principal.accountId, key, method: c.req.method, path: c.req.path, fingerprint, token, now });
  if (stored) {
    return c.body(stored.body, stored.status as 201, { ...stored.headers, "Content-Type": "application/json; charset=utf-8", "Idempotent-Replayed": "true" });
  }
  await next();
  const res = c.res;
  if (res.status >= 200 && res.status < 300) {
    const location = res.headers.get("Location");
    const headers: Record<string, string> = location ? { Location: location } : {};
    const secret = REPLAYABLE.get(c.req.path);
    const stored = secret
      ? { status: 200, body: JSON.stringify(withoutMember(await res.clone().json(), secret)), headers }
      : { status: res.status, body: await res.clone().text(), headers };
    await recordResponse(db, principal.accountId, key, token, stored);
  } else {
    await releaseClaim(db, principal.accountId, key, token);
  }
});

/** `resource` without its member `name`. */
function withoutMember(resource: Record<string, unknown>, name: string): Record<string, unknown> {
  const { [name]: _left, ...rest } = resource;
  return rest;
}

/** The JSON value of a body, or its text when it is not JSON. */
function jsonValue(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
