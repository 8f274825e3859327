/** The keys that exist, read in id order for the in-process index of existing keys (docs/architecture.md#unknown-api-keys). */
import { asc, gt } from "drizzle-orm";
import { type Database, qb } from "../db/client";
import { execute, params } from "../db/plan";
import { apiKeys } from "../db/schema";

const page = params<{ afterId: number; limit: number }>();
const keyHashesAfterQuery = page.prepare(
  qb
    .select({ id: apiKeys.id, secretHash: apiKeys.secretHash })
    .from(apiKeys)
    .where(gt(apiKeys.id, page("afterId")))
    .orderBy(asc(apiKeys.id))
    .limit(page("limit")),
);

/** Up to `limit` keys (revoked ones too) with id > `afterId`, ascending: their ids and SHA-256 hashes. One round trip. */
export async function keyHashesAfter(db: Database, afterId: number, limit: number): Promise<{ id: number; secretHash: string }[]> {
  return execute(db, keyHashesAfterQuery, { afterId, limit });
}
