/**
 * Accounts and their API keys (API.md §4): sign-up with a first key, key
 * listing, creation and revocation, and key verification for authentication.
 * Secrets are returned once by the functions that create them and never stored.
 */
import type { Row } from "@libsql/client";
import type { Database } from "../db/client";
import { isConstraintError, writeStatements } from "../db/batch";
import type { Role } from "../domain/principal";
import { ApiError, notFound } from "../lib/errors";
import { generateApiKey } from "./api-keys";

/** Account representation. */
export interface Account {
  id: number;
  name: string;
  email: string;
  role: Role;
  createdAt: string;
}

/** ApiKey representation (no secret). */
export interface ApiKey {
  id: number;
  name: string | null;
  prefix: string;
  createdAt: string;
  lastUsedAt: string | null;
}

/** ApiKey plus its secret, only in the response that creates it. */
export interface NewApiKey extends ApiKey {
  key: string;
}

/** The verified caller of a key. */
export interface KeyOwner {
  accountId: number;
  role: Role;
  apiKeyId: number;
}

const ACCOUNT_COLUMNS = "id, name, email, role, created_at";
const KEY_COLUMNS = "id, name, prefix, created_at, last_used_at";

/** Case-insensitive uniqueness key of an email address. */
export function emailKey(email: string): string {
  return email.trim().normalize("NFC").toLowerCase();
}

function toAccount(row: Row): Account {
  return { id: Number(row.id), name: String(row.name), email: String(row.email), role: row.role as Role, createdAt: String(row.created_at) };
}

function toApiKey(row: Row): ApiKey {
  return {
    id: Number(row.id),
    name: row.name === null ? null : String(row.name),
    prefix: String(row.prefix),
    createdAt: String(row.created_at),
    lastUsedAt: row.last_used_at === null ? null : String(row.last_used_at),
  };
}

/**
 * Create an account with `role` and its first key, in one batch.
 * @throws ApiError 409 `duplicate_email`.
 */
export async function createAccount(
  db: Database,
  input: { name: string; email: string; keyName?: string },
  role: Role,
  now: Date,
): Promise<{ account: Account; apiKey: NewApiKey }> {
  const at = now.toISOString();
  const material = await generateApiKey();
  try {
    const [accountRs, keyRs] = await writeStatements(db, [
      {
        sql: `INSERT INTO accounts (name, email, email_key, role, created_at) VALUES (?, ?, ?, ?, ?) RETURNING ${ACCOUNT_COLUMNS}`,
        args: [input.name, input.email.trim(), emailKey(input.email), role, at],
      },
      {
        sql: `INSERT INTO api_keys (account_id, name, prefix, secret_hash, created_at) VALUES (last_insert_rowid(), ?, ?, ?, ?) RETURNING ${KEY_COLUMNS}`,
        args: [input.keyName ?? "default", material.prefix, material.hash, at],
      },
    ]);
    return { account: toAccount(accountRs!.rows[0]!), apiKey: { ...toApiKey(keyRs!.rows[0]!), key: material.secret } };
  } catch (error) {
    if (isConstraintError(error)) throw new ApiError(409, "duplicate_email", "An account with this email already exists.");
    throw error;
  }
}

/** @throws ApiError 404 when absent. */
export async function getAccount(db: Database, accountId: number): Promise<Account> {
  const rs = await db.$client.execute({ sql: `SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = ?`, args: [accountId] });
  if (!rs.rows[0]) throw notFound("Account", accountId);
  return toAccount(rs.rows[0]);
}

/** The account with this email, if any. */
export async function findAccountByEmail(db: Database, email: string): Promise<Account | undefined> {
  const rs = await db.$client.execute({ sql: `SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE email_key = ?`, args: [emailKey(email)] });
  return rs.rows[0] ? toAccount(rs.rows[0]) : undefined;
}

/** True when at least one staff account exists. */
export async function hasStaffAccount(db: Database): Promise<boolean> {
  const rs = await db.$client.execute("SELECT EXISTS (SELECT 1 FROM accounts WHERE role = 'staff') AS present");
  return Number(rs.rows[0]?.present) === 1;
}

/** Most active (not revoked) keys an account may hold (API.md §5). */
export const MAX_ACTIVE_KEYS = 100;

/** Up to `limit` of the account's keys that are not revoked with id > `afterId`, by id. One round trip. */
export async function listKeys(db: Database, accountId: number, afterId: number, limit: number): Promise<ApiKey[]> {
  const rs = await db.$client.execute({
    sql: `SELECT ${KEY_COLUMNS} FROM api_keys WHERE account_id = ? AND revoked_at IS NULL AND id > ? ORDER BY id LIMIT ?`,
    args: [accountId, afterId, limit],
  });
  return rs.rows.map(toApiKey);
}

/**
 * Create another key for an account; the secret is in the result only. The
 * limit check and the insert are one statement (concurrent calls never pass it).
 * @throws ApiError 409 `key_limit_reached` when the account holds `MAX_ACTIVE_KEYS` active keys.
 */
export async function createKey(db: Database, accountId: number, name: string | undefined, now: Date): Promise<NewApiKey> {
  const material = await generateApiKey();
  const rs = await db.$client.execute({
    sql: `INSERT INTO api_keys (account_id, name, prefix, secret_hash, created_at)
          SELECT ?, ?, ?, ?, ?
          WHERE (SELECT count(*) FROM api_keys WHERE account_id = ? AND revoked_at IS NULL) < ?
          RETURNING ${KEY_COLUMNS}`,
    args: [accountId, name ?? null, material.prefix, material.hash, now.toISOString(), accountId, MAX_ACTIVE_KEYS],
  });
  if (!rs.rows[0]) {
    throw new ApiError(
      409,
      "key_limit_reached",
      `An account holds at most ${MAX_ACTIVE_KEYS} active keys; revoke one (DELETE /accounts/me/keys/{keyId}) first.`,
    );
  }
  return { ...toApiKey(rs.rows[0]), key: material.secret };
}

/** Revoke one of the account's keys. @throws ApiError 404 when it is not theirs or already revoked. */
export async function revokeKey(db: Database, accountId: number, keyId: number, now: Date): Promise<void> {
  const rs = await db.$client.execute({
    sql: "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND account_id = ? AND revoked_at IS NULL",
    args: [now.toISOString(), keyId, accountId],
  });
  if (rs.rowsAffected !== 1) throw notFound("API key", keyId);
}

/**
 * Verify a key by its SHA-256 hash and record its use (one round trip).
 * Returns null for unknown or revoked keys.
 */
export async function verifyKey(db: Database, secretHash: string, now: Date): Promise<KeyOwner | null> {
  const rs = await db.$client.execute({
    sql: `UPDATE api_keys SET last_used_at = ?
          WHERE secret_hash = ? AND revoked_at IS NULL
          RETURNING id, account_id, (SELECT role FROM accounts WHERE accounts.id = api_keys.account_id) AS role`,
    args: [now.toISOString(), secretHash],
  });
  const row = rs.rows[0];
  return row ? { accountId: Number(row.account_id), role: row.role as Role, apiKeyId: Number(row.id) } : null;
}

/**
 * A new key of the account `role`/`name` (email `<name>@<role>.petstore.invalid`),
 * creating that account on first use. For operators (`npm run keys:create`) and tests.
 * @throws Error when an account with that email exists with another role (for
 * example a customer who signed up with it): never hand out a key of the wrong role.
 */
export async function createOperatorKey(db: Database, role: Role, name: string, now: Date): Promise<{ account: Account; apiKey: NewApiKey }> {
  const email = `${name.toLowerCase().replace(/[^a-z0-9-]+/g, "-")}@${role}.petstore.invalid`;
  const existing = await findAccountByEmail(db, email);
  if (existing && existing.role !== role) {
    throw new Error(`Account ${existing.id} <${existing.email}> exists with role ${existing.role}, not ${role}; choose another --name.`);
  }
  if (existing) return { account: existing, apiKey: await createKey(db, existing.id, name, now) };
  return createAccount(db, { name, email, keyName: name }, role, now);
}

/**
 * On a database without any staff account, create one ("bootstrap") and return
 * its key, once; afterwards returns null, also when another process created it
 * at the same moment. Used by `npm start` on a fresh database.
 */
export async function bootstrapStaffKey(db: Database, now: Date): Promise<NewApiKey | null> {
  if (await hasStaffAccount(db)) return null;
  // One conditional batch: of several servers starting together on a fresh database, exactly one creates it.
  const at = now.toISOString();
  const email = "bootstrap@staff.petstore.invalid";
  const material = await generateApiKey();
  const [, keyRs] = await writeStatements(db, [
    {
      sql: `INSERT INTO accounts (name, email, email_key, role, created_at)
            SELECT 'bootstrap', ?, ?, 'staff', ? WHERE NOT EXISTS (SELECT 1 FROM accounts WHERE role = 'staff' OR email_key = ?)`,
      args: [email, emailKey(email), at, emailKey(email)],
    },
    {
      sql: `INSERT INTO api_keys (account_id, name, prefix, secret_hash, created_at)
            SELECT last_insert_rowid(), 'bootstrap', ?, ?, ? WHERE changes() = 1 RETURNING ${KEY_COLUMNS}`,
      args: [material.prefix, material.hash, at],
    },
  ]);
  const row = keyRs!.rows[0];
  if (row) return { ...toApiKey(row), key: material.secret };
  if (!(await hasStaffAccount(db))) throw new Error(`No staff account, and ${email} belongs to a customer: create a staff key with npm run keys:create.`);
  return null;
}
