/**
 * `Idempotency-Key` on authenticated POSTs (API.md §4) of POST /pets and
 * POST /categories. POST /store/orders claims the key inside its single order
 * batch (src/services/orders.service.ts). POSTs whose response carries a
 * secret (API keys, webhook signing secrets) do not replay: a secret is shown
 * once, so there the header is ignored and a retry creates another one.
 *
 * Per account and key: the first request claims the key (one statement that
 * inserts a placeholder, or takes over an expired row), runs, and stores its
 * 2xx response; a failed request releases the claim. A later request with the
 * same key and the same method, path and body within 24 h gets the stored
 * response again with `Idempotent-Replayed: true`; with anything else, 422
 * `idempotency_key_reused`; while the first is still running, 409
 * `concurrent_update`. A claim left by a crashed process expires after 60 s.
 * Costs 2 round trips beyond the request's own (claim, then store).
 */
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../lib/context";
import { ApiError } from "../lib/errors";
import { IDEMPOTENCY_TTL_MS } from "../services/orders.service";
import { sha256Hex } from "../services/api-keys";

/** How long an unfinished claim blocks its key, ms. */
const CLAIM_TTL_MS = 60_000;
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
  const requestHash = await sha256Hex(JSON.stringify([c.req.method, c.req.path, await c.req.text()]));
  const [claim, existing] = await db.$client.batch(
    [
      {
        sql: `INSERT INTO idempotency_keys (account_id, key, method, path, request_hash, response_status, response_body, response_headers, created_at)
              VALUES (?, ?, ?, ?, ?, 0, '', '{}', ?)
              ON CONFLICT (account_id, key) DO UPDATE SET method = excluded.method, path = excluded.path,
                request_hash = excluded.request_hash, response_status = 0, response_body = '', response_headers = '{}',
                created_at = excluded.created_at
              WHERE (idempotency_keys.response_status <> 0 AND idempotency_keys.created_at < ?)
                 OR (idempotency_keys.response_status = 0 AND idempotency_keys.created_at < ?)
              RETURNING 1 AS claimed`,
        args: [
          principal.accountId,
          key,
          c.req.method,
          c.req.path,
          requestHash,
          now.toISOString(),
          new Date(now.getTime() - IDEMPOTENCY_TTL_MS).toISOString(),
          new Date(now.getTime() - CLAIM_TTL_MS).toISOString(),
        ],
      },
      {
        sql: "SELECT request_hash, response_status, response_body, response_headers FROM idempotency_keys WHERE account_id = ? AND key = ?",
        args: [principal.accountId, key],
      },
    ],
    "write",
  );
  if (!claim!.rows[0]) {
    const row = existing!.rows[0]!;
    if (String(row.request_hash) !== requestHash) {
      throw new ApiError(422, "idempotency_key_reused", "This Idempotency-Key was used with a different request in the last 24 hours.");
    }
    if (Number(row.response_status) === 0) {
      throw new ApiError(409, "concurrent_update", "A request with this Idempotency-Key is still in progress; retry shortly.");
    }
    const headers = JSON.parse(String(row.response_headers)) as Record<string, string>;
    return c.body(String(row.response_body), Number(row.response_status) as 201, {
      ...headers,
      "Content-Type": "application/json; charset=utf-8",
      "Idempotent-Replayed": "true",
    });
  }
  await next();
  const res = c.res;
  if (res.status >= 200 && res.status < 300) {
    const location = res.headers.get("Location");
    await db.$client.execute({
      sql: "UPDATE idempotency_keys SET response_status = ?, response_body = ?, response_headers = ? WHERE account_id = ? AND key = ?",
      args: [res.status, await res.clone().text(), JSON.stringify(location ? { Location: location } : {}), principal.accountId, key],
    });
  } else {
    await db.$client.execute({
      sql: "DELETE FROM idempotency_keys WHERE account_id = ? AND key = ? AND response_status = 0",
      args: [principal.accountId, key],
    });
  }
});
