/**
 * `Idempotency-Key` (API.md §4), one module for every POST that honours it:
 * POST /pets and POST /categories (through src/middleware/idempotency.ts) and
 * POST /store/orders (inside its one order batch, src/services/orders.service.ts).
 *
 * Per account and key, one row of `idempotency_keys`:
 * - the fingerprint of a request is SHA-256 of the canonical JSON (object keys
 *   sorted, no whitespace) of `[method, path, body]`, the body being the JSON
 *   value sent (as validated, where the service sees it), so whitespace and key
 *   order never matter;
 * - the first request claims the key (a placeholder row, `response_status` 0);
 *   a stored response is kept `IDEMPOTENCY_TTL_MS` (24 h), an unfinished claim
 *   (a crashed process) blocks its key `CLAIM_TTL_MS` (60 s); after that the
 *   key can be claimed again;
 * - a later request with the same key: another fingerprint → 422
 *   `idempotency_key_reused`; the first still running → 409
 *   `concurrent_update`; else the stored 2xx response is replayed.
 */
import type { InStatement, Row } from "@libsql/client";
import type { Database } from "../db/client";
import { ApiError } from "../lib/errors";
import { sha256Hex } from "./api-keys";

/** How long a stored response is replayed (API.md §4): 24 h, in milliseconds. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** How long an unfinished claim blocks its key, in milliseconds. */
export const CLAIM_TTL_MS = 60_000;

/** A stored response to send again, with `Idempotent-Replayed: true`. */
export interface StoredResponse {
  status: number;
  /** The body exactly as first sent (JSON text). */
  body: string;
  headers: Record<string, string>;
}

/** `value` as JSON with object keys sorted at every level and no whitespace (RFC 8785's ordering, JSON.stringify's numbers). */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item === undefined ? null : item)).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, item]) => item !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** The fingerprint of a request (hex SHA-256 of the canonical JSON of `[method, path, body]`). */
export function requestFingerprint(method: string, path: string, body: unknown): Promise<string> {
  return sha256Hex(canonicalJson([method, path, body ?? null]));
}

/**
 * The statement that claims `key` for a request (one row, `response_status`
 * 0): inserts it, or takes over a row whose response expired (24 h) or whose
 * claim was abandoned (60 s). Changes one row (`changes() = 1`, `RETURNING
 * claimed`) when the claim is this request's, none otherwise.
 */
export function claimStatement(accountId: number, key: string, method: string, path: string, fingerprint: string, now: Date): InStatement {
  return {
    sql: `INSERT INTO idempotency_keys (account_id, key, method, path, request_hash, response_status, response_body, response_headers, created_at)
          VALUES (?, ?, ?, ?, ?, 0, '', '{}', ?)
          ON CONFLICT (account_id, key) DO UPDATE SET method = excluded.method, path = excluded.path,
            request_hash = excluded.request_hash, response_status = 0, response_body = '', response_headers = '{}',
            created_at = excluded.created_at
          WHERE (idempotency_keys.response_status <> 0 AND idempotency_keys.created_at < ?)
             OR (idempotency_keys.response_status = 0 AND idempotency_keys.created_at < ?)
          RETURNING 1 AS claimed`,
    args: [
      accountId,
      key,
      method,
      path,
      fingerprint,
      now.toISOString(),
      new Date(now.getTime() - IDEMPOTENCY_TTL_MS).toISOString(),
      new Date(now.getTime() - CLAIM_TTL_MS).toISOString(),
    ],
  };
}

/** The statement that releases this request's claim when it did not succeed (only an unfinished claim). */
export function releaseStatement(accountId: number, key: string): InStatement {
  return { sql: "DELETE FROM idempotency_keys WHERE account_id = ? AND key = ? AND response_status = 0", args: [accountId, key] };
}

/** Columns of the row of a key that `existingResponse` reads (`request_hash`, `response_status`, `response_body`, `response_headers`). */
export const KEY_COLUMNS = "request_hash, response_status, response_body, response_headers";

/**
 * What to do with a key another request holds, from its row (`KEY_COLUMNS`):
 * the stored response to replay.
 * @throws ApiError 422 `idempotency_key_reused` (another fingerprint), 409 `concurrent_update` (the first request is still running).
 */
export function existingResponse(row: Row, fingerprint: string): StoredResponse {
  if (String(row.request_hash) !== fingerprint) {
    throw new ApiError(422, "idempotency_key_reused", "This Idempotency-Key was used with a different request in the last 24 hours.");
  }
  if (Number(row.response_status) === 0) {
    throw new ApiError(409, "concurrent_update", "A request with this Idempotency-Key is still in progress; retry shortly.");
  }
  return { status: Number(row.response_status), body: String(row.response_body), headers: JSON.parse(String(row.response_headers)) as Record<string, string> };
}

/**
 * Claim `key` for a request that runs on its own (one round trip): null when
 * the claim is this request's (run it, then `recordResponse` or `releaseClaim`),
 * else the stored response to replay.
 * @throws ApiError 422 `idempotency_key_reused`, 409 `concurrent_update` (see `existingResponse`).
 */
export async function claimKey(
  db: Database,
  accountId: number,
  key: string,
  method: string,
  path: string,
  fingerprint: string,
  now: Date,
): Promise<StoredResponse | null> {
  const [claim, existing] = await db.$client.batch(
    [
      claimStatement(accountId, key, method, path, fingerprint, now),
      { sql: `SELECT ${KEY_COLUMNS} FROM idempotency_keys WHERE account_id = ? AND key = ?`, args: [accountId, key] },
    ],
    "write",
  );
  return claim!.rows[0] ? null : existingResponse(existing!.rows[0]!, fingerprint);
}

/** Store the 2xx response of the request that holds the claim (one round trip); `body` as sent, JSON text. */
export async function recordResponse(db: Database, accountId: number, key: string, response: StoredResponse): Promise<void> {
  await db.$client.execute({
    sql: "UPDATE idempotency_keys SET response_status = ?, response_body = ?, response_headers = ? WHERE account_id = ? AND key = ?",
    args: [response.status, response.body, JSON.stringify(response.headers), accountId, key],
  });
}

/** Release the claim of a request that did not succeed, so the key can be used again (one round trip). */
export async function releaseClaim(db: Database, accountId: number, key: string): Promise<void> {
  await db.$client.execute(releaseStatement(accountId, key));
}
