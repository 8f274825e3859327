/** `Idempotency-Key` (docs/api.md#idempotency-key): plan steps that claim a key, record the response and release a refused claim in the creating batch. */
import { and, eq, type SQL, sql } from "drizzle-orm";
import type { SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import stringify from "safe-stable-stringify";
import { qb } from "../db/client";
import { placeholders } from "../db/placeholders";
import { type Params, params } from "../db/plan";
import { idempotencyKeys } from "../db/schema";
import { IdempotencyKeyInProgress, IdempotencyKeyReused } from "../domain/errors";
import type { KeyClaim, StoredResponse } from "../domain/idempotency";
import { sha256Hex } from "./api-keys";

/** How long a stored response is replayed (docs/api.md#idempotency-key): 24 h, in milliseconds. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** How long an unfinished claim blocks its key, in milliseconds. */
export const CLAIM_TTL_MS = 60_000;

/** A request's fingerprint: hex SHA-256 of `[method, path, body]` (the body as validated) as JSON with keys sorted at every level, no whitespace. */
export function requestFingerprint(method: string, path: string, body: unknown): Promise<string> {
  return sha256Hex(stringify([method, path, body ?? null]));
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

/** The values of a claim's statements (`claimValues`). */
type ClaimValues = ReturnType<typeof claimValues>;

/** The values that name this request's claim: the key `key` of account `accountId`, claimed with `claimToken`. */
export type OwnClaim = Pick<ClaimValues, "accountId" | "key" | "claimToken">;

const claiming = params<ClaimValues>();
const keyRow = params<Pick<ClaimValues, "accountId" | "key">>();
const own = params<OwnClaim>();
/** The row of key `key` of account `accountId`. */
function thisKey<V extends Pick<ClaimValues, "accountId" | "key">>(p: Params<V>) {
  return and(eq(idempotencyKeys.accountId, p("accountId")), eq(idempotencyKeys.key, p("key")));
}

/** The condition "this request still holds its unfinished claim" (`OwnClaim`), for a plan's own record step. */
export function ownClaim<V extends OwnClaim>(p: Params<V>) {
  return and(thisKey(p), eq(idempotencyKeys.claimToken, p("claimToken")), sql`${idempotencyKeys.responseStatus} = 0`);
}

/** The response columns of a claim not yet answered: status 0, no body, no headers. */
const unanswered = { responseStatus: sql`0`, responseBody: sql`''`, responseHeaders: sql`'{}'` };

/** The step claiming the key (`claimValues`; `response_status` 0): inserts its row or takes over an expired or abandoned one; a row when the claim is this request's. */
export const claimStep = claiming.statement(
  qb
    .insert(idempotencyKeys)
    .values({
      ...placeholders(claiming, ["accountId", "key", "method", "path", "claimToken"]),
      requestHash: claiming("fingerprint"),
      createdAt: claiming("at"),
      ...unanswered,
    })
    .onConflictDoUpdate({
      target: [idempotencyKeys.accountId, idempotencyKeys.key],
      set: {
        method: sql`excluded.method`,
        path: sql`excluded.path`,
        requestHash: sql`excluded.request_hash`,
        ...unanswered,
        createdAt: sql`excluded.created_at`,
        claimToken: sql`excluded.claim_token`,
      },
      setWhere: sql`(${idempotencyKeys.responseStatus} <> 0 and ${idempotencyKeys.createdAt} < ${claiming("storedBefore")})
        or (${idempotencyKeys.responseStatus} = 0 and ${idempotencyKeys.createdAt} < ${claiming("claimedBefore")})`,
    })
    .returning({ claimed: sql<number>`1` }),
);

/** The plan step that releases this request's claim when it did not succeed; another request's claim or stored response is never touched. */
export const releaseStep = own.statement(qb.delete(idempotencyKeys).where(ownClaim(own)));

/** A random claim token: 32 hex digits, the 122 random bits of a version-4 UUID (RFC 9562 §5.4). */
export function newClaimToken(): string {
  return crypto.randomUUID().replaceAll("-", "");
}

/** The values of `claimStep` for `claim`. */
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

/** The stored response to replay from another request's key row. @throws IdempotencyKeyInProgress, IdempotencyKeyReused (another fingerprint). */
export function existingResponse(row: KeyRow, fingerprint: string): StoredResponse {
  if (row.responseStatus === 0) throw new IdempotencyKeyInProgress();
  if (row.requestHash !== fingerprint) throw new IdempotencyKeyReused();
  return { status: row.responseStatus, body: row.responseBody, headers: JSON.parse(row.responseHeaders) as Record<string, string> };
}

/** The plan step that reads the key's row (`keyColumns`) at the end of a keyed batch: the other request's row when the claim failed. */
export const keyRowStep = keyRow.statement(qb.select(keyColumns).from(idempotencyKeys).where(thisKey(keyRow)));

/** The step that stores `status`, `body` and `location` (SQL over the row of `table` just inserted) on this request's claim, when the step before changed a row. */
export function recordCreated(status: number, table: SQLiteTable & { id: SQLiteColumn }, body: SQL, location?: SQL) {
  const inserted = (expression: SQL) => sql<string>`(select ${expression} from ${table} where ${table.id} = last_insert_rowid())`;
  return own.guarded((changed) =>
    qb
      .update(idempotencyKeys)
      .set({
        responseStatus: status,
        responseBody: inserted(body),
        responseHeaders: location === undefined ? sql`'{}'` : sql`json_object('Location', ${inserted(location)})`,
      })
      .where(and(ownClaim(own), changed)),
  );
}

/** After a keyed batch that created nothing: null when `claimed` is this request's claim, else the response to replay. @throws as `existingResponse`. */
export function replayUnlessClaimed(claimed: readonly unknown[], existing: readonly KeyRow[], claim: KeyClaim): StoredResponse | null {
  if (claimed.length > 0) return null;
  const [row] = existing;
  // Not claimed: the claim's INSERT met the row in the same transaction, so it exists.
  if (!row) throw new Error(`Idempotency-Key row of account ${claim.accountId} neither claimed nor found`);
  return existingResponse(row, claim.fingerprint);
}
