/** The keys that exist, read in id order for the in-process index of existing keys (docs/architecture.md#unknown-api-keys). */
import { selectPage } from "../db/by-id";
import { type Database, qb } from "../db/client";
import { execute } from "../db/plan";
import { apiKeys } from "../db/schema";

const keyHashesAfterQuery = selectPage(qb.select({ id: apiKeys.id, secretHash: apiKeys.secretHash }).from(apiKeys).$dynamic(), apiKeys.id);

/** Up to `limit` keys (revoked ones too) with id > `afterId`, ascending: their ids and SHA-256 hashes. One round trip. */
export async function keyHashesAfter(db: Database, afterId: number, limit: number): Promise<{ id: number; secretHash: string }[]> {
  return execute(db, keyHashesAfterQuery, { afterId, limit });
}
