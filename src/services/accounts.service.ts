/** Accounts and their API keys (docs/api.md#authentication); a secret is returned once, by the function that creates it, and never stored. */
import { and, count, eq, gt, isNull, lt, or, type SQL, sql } from "drizzle-orm";
import { selectById } from "../db/by-id";
import { type Database, qb } from "../db/client";
import { isConstraintError } from "../db/errors";
import { execute, guarded, type Params, params, plan, run } from "../db/plan";
import { accounts, apiKeys } from "../db/schema";
import { aliasedPlaceholders, placeholders } from "../db/placeholders";
import type { RowOf } from "../db/representation";
import { jsonObject } from "../db/select-list";
import { Conflict, found, LimitReached, NotFound } from "../domain/errors";
import type { Creation, KeyClaim } from "../domain/idempotency";
import type { Role } from "../domain/principal";
import { generateApiKey } from "./api-keys";
import { claimStep, claimValues, keyRowStep, recordCreated, releaseStep, replayUnlessClaimed } from "./idempotency.service";

const ACCOUNT = { id: accounts.id, name: accounts.name, email: accounts.email, role: accounts.role, createdAt: accounts.createdAt };
const API_KEY = { id: apiKeys.id, name: apiKeys.name, prefix: apiKeys.prefix, createdAt: apiKeys.createdAt, lastUsedAt: apiKeys.lastUsedAt };

/** Account representation. */
export type Account = RowOf<typeof ACCOUNT>;
/** ApiKey representation (no secret). */
export type ApiKey = RowOf<typeof API_KEY>;
/** ApiKey plus its secret, only in the response that creates it. */
export type NewApiKey = ApiKey & { key: string };

/** The values of a new key besides its account and name. */
type KeyMaterial = { prefix: string; secretHash: string; createdAt: string };

/** Every column of a new `api_keys` row in table order (an insert-select needs them all), for `accountId`. */
function newKeyColumns<V extends KeyMaterial>(p: Params<V>, accountId: SQL<number>, name: SQL<string | null>) {
  return {
    id: sql<number>`NULL`.as("id"),
    accountId: accountId.as("account_id"),
    name: name.as("name"),
    ...aliasedPlaceholders(p, ["prefix", "secretHash", "createdAt"]),
    lastUsedAt: sql<string | null>`NULL`.as("last_used_at"),
    revokedAt: sql<string | null>`NULL`.as("revoked_at"),
  };
}

/** Case-insensitive uniqueness key of an email address. */
export function emailKey(email: string): string {
  return email.trim().normalize("NFC").toLowerCase();
}

const signing = params<KeyMaterial & { name: string; email: string; emailKey: string; role: Role; keyName: string }>();
const signUp = plan({
  account: signing.statement(
    qb
      .insert(accounts)
      .values(placeholders(signing, ["name", "email", "emailKey", "role", "createdAt"]))
      .returning(ACCOUNT),
  ),
  /** The first key of the account the step before inserted (a failed insert fails the batch). */
  key: signing.statement(
    qb
      .insert(apiKeys)
      .values({ accountId: sql`last_insert_rowid()`, name: signing("keyName"), ...placeholders(signing, ["prefix", "secretHash", "createdAt"]) })
      .returning(API_KEY),
  ),
});

/** Create an account with `role` and its first key, in one batch. @throws Conflict `duplicate_email`. */
export async function createAccount(
  db: Database,
  input: { name: string; email: string; keyName?: string },
  role: Role,
  now: Date,
): Promise<{ account: Account; apiKey: NewApiKey }> {
  const material = await generateApiKey();
  try {
    const { account, key } = await run(db, signUp, {
      name: input.name,
      email: input.email.trim(),
      emailKey: emailKey(input.email),
      role,
      createdAt: now.toISOString(),
      keyName: input.keyName ?? "default",
      prefix: material.prefix,
      secretHash: material.hash,
    });
    return { account: account[0]!, apiKey: { ...key[0]!, key: material.secret } };
  } catch (error) {
    throw isConstraintError(error) ? new Conflict("duplicate_email", {}) : error;
  }
}

const getAccountQuery = selectById(accounts, ACCOUNT);

/** @throws NotFound when absent. */
export async function getAccount(db: Database, accountId: number): Promise<Account> {
  return found(await execute(db, getAccountQuery, { id: accountId }), "account", accountId);
}

const byEmail = params<{ emailKey: string }>();
/** The account with this email key, if any. */
const findAccountQuery = byEmail.prepare(
  qb
    .select(ACCOUNT)
    .from(accounts)
    .where(eq(accounts.emailKey, byEmail("emailKey"))),
);

/** `role = 'staff'` as a literal, so that the partial index of staff accounts applies. */
const isStaff = sql`${accounts.role} = 'staff'`;

const anyStaffQuery = params<Record<never, never>>().prepare(qb.select({ id: accounts.id }).from(accounts).where(isStaff).limit(1));

/** True when at least one staff account exists. */
export async function hasStaffAccount(db: Database): Promise<boolean> {
  return (await execute(db, anyStaffQuery, {})).length > 0;
}

/** Most active (not revoked) keys an account may hold (docs/api.md#limits). */
export const MAX_ACTIVE_KEYS = 100;

const page = params<{ accountId: number; afterId: number; limit: number }>();
const listKeysQuery = page.prepare(
  qb
    .select(API_KEY)
    .from(apiKeys)
    .where(and(eq(apiKeys.accountId, page("accountId")), isNull(apiKeys.revokedAt), gt(apiKeys.id, page("afterId"))))
    .orderBy(apiKeys.id)
    .limit(page("limit")),
);

/** Up to `limit` of the account's keys that are not revoked with id > `afterId`, by id. One round trip. */
export async function listKeys(db: Database, accountId: number, afterId: number, limit: number): Promise<ApiKey[]> {
  return execute(db, listKeysQuery, { accountId, afterId, limit });
}

/** Creating a key: at most `max` active keys. */
const keys = params<KeyMaterial & { accountId: number; name: string | null; max: number }>();
const activeKeys = qb
  .select({ n: count().as("n") })
  .from(apiKeys)
  .where(and(eq(apiKeys.accountId, keys("accountId")), isNull(apiKeys.revokedAt)))
  .as("active_keys");

/** Inserts only while the account holds fewer than `max` active keys and `guard` (if any) holds: check and insert are one statement. */
function insertKey(guard?: SQL) {
  return keys.prepare(
    qb
      .insert(apiKeys)
      .select(
        qb
          .select(newKeyColumns(keys, sql<number>`${keys("accountId")}`, sql<string | null>`${keys("name")}`))
          .from(activeKeys)
          .where(and(lt(activeKeys.n, keys("max")), guard)),
      )
      .returning(API_KEY),
  );
}

const insertKeyQuery = insertKey();

/** Creating a key with an Idempotency-Key: the claim guards the insert, the response (200, no secret) is recorded with it, a refused key releases the claim. */
const keyedKeyCreation = plan({
  claim: claimStep,
  key: guarded(insertKey),
  record: recordCreated(200, apiKeys, jsonObject(API_KEY)),
  release: releaseStep,
  existing: keyRowStep,
});

/** Create another key honouring `claim` (if any): it with its secret, or the stored response. @throws LimitReached, IdempotencyKeyInProgress, …Reused. */
export async function createKeyOnce(db: Database, accountId: number, name: string | undefined, now: Date, claim?: KeyClaim): Promise<Creation<NewApiKey>> {
  const material = await generateApiKey();
  const values = { accountId, name: name ?? null, prefix: material.prefix, secretHash: material.hash, createdAt: now.toISOString(), max: MAX_ACTIVE_KEYS };
  const keyed = claim && (await run(db, keyedKeyCreation, { ...values, ...claimValues(claim) }));
  const [apiKey] = keyed ? keyed.key : await execute(db, insertKeyQuery, values);
  if (apiKey) return { created: { ...apiKey, key: material.secret } };
  const replay = claim && keyed ? replayUnlessClaimed(keyed.claim, keyed.existing, claim) : null;
  if (replay) return { replay };
  throw new LimitReached("apiKeys", MAX_ACTIVE_KEYS);
}

const revoking = params<{ revokedAt: string; id: number; accountId: number }>();
const revokeKeyQuery = revoking.prepare(
  qb
    .update(apiKeys)
    .set({ revokedAt: sql`${revoking("revokedAt")}` })
    .where(and(eq(apiKeys.id, revoking("id")), eq(apiKeys.accountId, revoking("accountId")), isNull(apiKeys.revokedAt))),
);

/** Revoke one of the account's keys. @throws NotFound when it is not theirs or already revoked. */
export async function revokeKey(db: Database, accountId: number, keyId: number, now: Date): Promise<void> {
  const { rowsAffected } = await execute(db, revokeKeyQuery, { revokedAt: now.toISOString(), id: keyId, accountId });
  if (rowsAffected !== 1) throw new NotFound("apiKey", keyId);
}

/** A new key of the account `role`/`name`, created on first use (`npm run keys:create`). @throws Error when its email has another role. */
export async function createOperatorKey(db: Database, role: Role, name: string, now: Date): Promise<{ account: Account; apiKey: NewApiKey }> {
  const email = `${name.toLowerCase().replace(/[^a-z0-9-]+/g, "-")}@${role}.petstore.invalid`;
  const [existing] = await execute(db, findAccountQuery, { emailKey: emailKey(email) });
  if (existing && existing.role !== role) {
    throw new Error(`Account ${existing.id} <${existing.email}> exists with role ${existing.role}, not ${role}; choose another --name.`);
  }
  if (existing) return { account: existing, apiKey: (await createKeyOnce(db, existing.id, name, now)).created! };
  return createAccount(db, { name, email, keyName: name }, role, now);
}

const booting = params<KeyMaterial & { email: string; emailKey: string }>();
const staffOrEmail = qb
  .select({ n: count().as("n") })
  .from(accounts)
  .where(or(isStaff, eq(accounts.emailKey, booting("emailKey"))))
  .as("taken");

const bootstrap = plan({
  /** The account, only while no staff account and no account with its email exist. */
  account: booting.statement(
    qb.insert(accounts).select(
      qb
        .select({
          id: sql<number>`NULL`.as("id"),
          name: sql<string>`'bootstrap'`.as("name"),
          ...aliasedPlaceholders(booting, ["email", "emailKey"]),
          role: sql<Role>`'staff'`.as("role"),
          createdAt: sql<string>`${booting("createdAt")}`.as("created_at"),
        })
        .from(staffOrEmail)
        .where(eq(staffOrEmail.n, 0)),
    ),
  ),
  /** The key, only when the step before inserted the account. */
  key: booting.guarded((changed) =>
    qb
      .insert(apiKeys)
      .select(
        qb
          .select(newKeyColumns(booting, sql<number>`${accounts.id}`, sql<string>`'bootstrap'`))
          .from(accounts)
          .where(and(eq(accounts.id, sql`last_insert_rowid()`), changed)),
      )
      .returning(API_KEY),
  ),
});

/** Without a staff account, create one ("bootstrap") and return its key; else null. @throws Error when its email belongs to a customer. */
export async function bootstrapStaffKey(db: Database, now: Date): Promise<NewApiKey | null> {
  if (await hasStaffAccount(db)) return null;
  const email = "bootstrap@staff.petstore.invalid";
  const material = await generateApiKey();
  const values = { email, emailKey: emailKey(email), createdAt: now.toISOString(), prefix: material.prefix, secretHash: material.hash };
  const [apiKey] = (await run(db, bootstrap, values)).key;
  if (apiKey) return { ...apiKey, key: material.secret };
  if (!(await hasStaffAccount(db))) throw new Error(`No staff account, and ${email} belongs to a customer: create a staff key with npm run keys:create.`);
  return null;
}
