/** Verifying an API key (docs/api.md#authentication): whose its hash is; its use recorded at most once a minute across processes. */
import { and, eq, isNull, sql } from "drizzle-orm";
import { type Database, qb } from "../db/client";
import { params, plan, run } from "../db/plan";
import { accounts, apiKeys } from "../db/schema";
import type { Principal } from "../domain/principal";

/** How often a key's `lastUsedAt` is written at most, ms: within this, a verification writes nothing. */
export const LAST_USED_INTERVAL_MS = 60_000;

const p = params<{ now: string; staleBefore: string; secretHash: string }>();
/** Verifying a key: its use is recorded only when the last record is older than `staleBefore` (usually nothing is written). */
const verification = plan({
  touch: p.statement(
    qb
      .update(apiKeys)
      .set({ lastUsedAt: sql`${p("now")}` })
      .where(
        and(
          eq(apiKeys.secretHash, p("secretHash")),
          isNull(apiKeys.revokedAt),
          sql`(${apiKeys.lastUsedAt} is null or ${apiKeys.lastUsedAt} < ${p("staleBefore")})`,
        ),
      ),
  ),
  owner: p.statement(
    qb
      .select({ accountId: apiKeys.accountId, role: accounts.role, apiKeyId: apiKeys.id })
      .from(apiKeys)
      .innerJoin(accounts, eq(accounts.id, apiKeys.accountId))
      .where(and(eq(apiKeys.secretHash, p("secretHash")), isNull(apiKeys.revokedAt))),
  ),
});

/** The owner of the key whose SHA-256 is `secretHash` (null: unknown or revoked), its use recorded at most once per `LAST_USED_INTERVAL_MS`. One round trip. */
export async function verifyKey(db: Database, secretHash: string, now: Date): Promise<Principal | null> {
  const staleBefore = new Date(now.getTime() - LAST_USED_INTERVAL_MS).toISOString();
  const { owner } = await run(db, verification, { now: now.toISOString(), staleBefore, secretHash });
  return owner[0] ?? null;
}
