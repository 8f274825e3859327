/**
 * `Idempotency-Key` (docs/api.md#idempotency-key) for every POST that honours it: POST /pets,
 * /categories, /accounts/me/keys, /webhooks and /store/orders each claim the
 * key inside the one batch that creates the resource, its events and the
 * stored response (docs/architecture.md, "Writes"). One `idempotency_keys` row
 * per account and key, whatever the endpoint: the first request claims it with
 * a random claim token; one arriving while a claim is unfinished is refused
 * (IdempotencyKeyInProgress: 409 `concurrent_update`), a later one with another
 * fingerprint too (IdempotencyKeyReused: 422 `idempotency_key_reused`), else
 * the stored 2xx response is replayed. Only the
 * request whose token is on the row records or releases it.
 * Responses are kept 24 h; an unfinished claim blocks its key 60 s.
 */
import { and, eq, type SQL, sql } from "drizzle-orm";
import { qb } from "../db/client";
import { guarded, statement } from "../db/plan";
import { idempotencyKeys } from "../db/schema";
import { IdempotencyKeyInProgress, IdempotencyKeyReused } from "../domain/errors";
import type { KeyClaim, StoredResponse } from "../domain/idempotency";
import { sha256Hex } from "./api-keys";

export type { Creation, KeyClaim, StoredResponse } from "../domain/idempotency";

/** How long a stored response is replayed (docs/api.md#idempotency-key): 24 h, in milliseconds. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** How long an unfinished claim blocks its key, in milliseconds. */
export const CLAIM_TTL_MS = 60_000;

/** `value` as JSON with object keys sorted at every level and no whitespace (RFC 8785's ordering, JSON.stringify's numbers). */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item === undefined ? null : item)).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([_key, item]) => item !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/**
 * The fingerprint of a request: hex SHA-256 of the canonical JSON of
 * `[method, path, body]`, the body as validated, so whitespace and key order never matter.
 */
export function requestFingerprint(method: string, path: string, body: unknown): Promise<string> {
  return sha256Hex(canonicalJson([method, path, body ?? null]));
}

/** The columns of a key's row that decide a replay (`existingResponse`). */
export const keyColumns = {
  requestHash: idempotencyKeys.requestHash,
  responseStatus: idempotencyKeys.responseStatus,
  responseBody: idempotencyKeys.responseBody,
  responseHeaders: idempotencyKeys.responseHeaders,
};

/** A key's row as `keyColumns` selects it. */
export type KeyRow = Pick<typeof idempotencyKeys.$inferSelect, keyof typeof keyColumns>;

/** The row of key `key` of account `accountId` (placeholders). */
const thisKey = and(eq(idempotencyKeys.accountId, sql.placeholder("accountId")), eq(idempotencyKeys.key, sql.placeholder("key")));

/** That row while it is the unfinished claim of this request (placeholder `claimToken`). */
const ownClaim = and(thisKey, eq(idempotencyKeys.claimToken, sql.placeholder("claimToken")), sql`${idempotencyKeys.responseStatus} = 0`);

/**
 * Claims the key for a request (one row, `response_status` 0): inserts it, or
 * takes over a row whose response expired (24 h) or whose claim was abandoned
 * (60 s). Changes one row (`changes() = 1`, returns `{ claimed: 1 }`) when the
 * claim is this request's, none otherwise. Placeholders: see `claimValues`.
 */
const claimQuery = qb
  .insert(idempotencyKeys)
  .values({
    accountId: sql.placeholder("accountId"),
    key: sql.placeholder("key"),
    method: sql.placeholder("method"),
    path: sql.placeholder("path"),
    requestHash: sql.placeholder("fingerprint"),
    responseStatus: sql`0`,
    responseBody: sql`''`,
    responseHeaders: sql`'{}'`,
    createdAt: sql.placeholder("at"),
    claimToken: sql.placeholder("claimToken"),
  })
  .onConflictDoUpdate({
    target: [idempotencyKeys.accountId, idempotencyKeys.key],
    set: {
      method: sql`excluded.method`,
      path: sql`excluded.path`,
      requestHash: sql`excluded.request_hash`,
      responseStatus: sql`0`,
      responseBody: sql`''`,
      responseHeaders: sql`'{}'`,
      createdAt: sql`excluded.created_at`,
      claimToken: sql`excluded.claim_token`,
    },
    setWhere: sql`(${idempotencyKeys.responseStatus} <> 0 and ${idempotencyKeys.createdAt} < ${sql.placeholder("storedBefore")})
        or (${idempotencyKeys.responseStatus} = 0 and ${idempotencyKeys.createdAt} < ${sql.placeholder("claimedBefore")})`,
  })
  .returning({ claimed: sql<number>`1` })
  .prepare();

/** The key's row (`keyColumns`), if any. */
const keyQuery = qb.select(keyColumns).from(idempotencyKeys).where(thisKey).prepare();

/** Releases this request's claim when it did not succeed; another request's claim or stored response is never touched. */
const releaseQuery = qb.delete(idempotencyKeys).where(ownClaim).prepare();

/** The condition "this request still holds its unfinished claim" (placeholders `accountId`, `key`, `claimToken`), for a plan's own record step. */
export const ownClaimCondition = ownClaim!;

/** The plan step that claims a key (values: `claimValues`): one row when the claim is this request's, none otherwise. */
export const claimStep = statement(claimQuery);

/** The plan step that releases this request's claim when it did not succeed (placeholders `accountId`, `key`, `claimToken`). */
export const releaseStep = statement(releaseQuery);

/** A random claim token: 32 hex digits, the 122 random bits of a version-4 UUID (RFC 9562 §5.4). */
export function newClaimToken(): string {
  return crypto.randomUUID().replaceAll("-", "");
}

/** The placeholder values of `claimStep` for `claim`. */
export function claimValues(claim: KeyClaim) {
  const { now, token, ...rest } = claim;
  return {
    ...rest,
    claimToken: token,
    at: now.toISOString(),
    storedBefore: new Date(now.getTime() - IDEMPOTENCY_TTL_MS).toISOString(),
    claimedBefore: new Date(now.getTime() - CLAIM_TTL_MS).toISOString(),
  };
}

/**
 * What to do with a key another request holds, from its row (`keyColumns`):
 * the stored response to replay. While that request runs, any other request
 * with its key waits, whatever its endpoint and body.
 * @throws IdempotencyKeyInProgress (the first request is still running), IdempotencyKeyReused (another fingerprint).
 */
export function existingResponse(row: KeyRow, fingerprint: string): StoredResponse {
  if (row.responseStatus === 0) throw new IdempotencyKeyInProgress();
  if (row.requestHash !== fingerprint) throw new IdempotencyKeyReused();
  return { status: row.responseStatus, body: row.responseBody, headers: JSON.parse(row.responseHeaders) as Record<string, string> };
}

/** The plan step that reads the key's row (`keyColumns`) at the end of a keyed batch: the other request's row when the claim failed. */
export const keyRowStep = statement(keyQuery);

/**
 * The step that stores the resource just created as this request's response,
 * on its own unfinished claim only, when the step just before (name it with
 * `.after`) changed one row: `status`, the body and the `Location` (if any)
 * built in SQL from the created row, without any secret.
 */
export function recordCreated(status: number, body: SQL<string>, location?: SQL<string>) {
  return guarded((changed) =>
    qb
      .update(idempotencyKeys)
      .set({
        responseStatus: status,
        responseBody: body,
        responseHeaders: location === undefined ? sql`'{}'` : sql`json_object('Location', ${location})`,
      })
      .where(and(ownClaim, changed))
      .prepare(),
  );
}

/**
 * After a keyed batch that created nothing: null when the claim was this
 * request's (it was refused, and released in the batch), else the key's
 * stored response to replay.
 * @param claimed the rows of the batch's claim step; `existing` those of `keyRowStep`.
 * @throws IdempotencyKeyInProgress, IdempotencyKeyReused (see `existingResponse`).
 */
export function replayUnlessClaimed(claimed: readonly unknown[], existing: readonly KeyRow[], claim: KeyClaim): StoredResponse | null {
  if (claimed.length > 0) return null;
  const [row] = existing;
  // Not claimed: the claim's INSERT met the row in the same transaction, so it exists.
  if (!row) throw new Error(`Idempotency-Key row of account ${claim.accountId} neither claimed nor found`);
  return existingResponse(row, claim.fingerprint);
}
