/** Deletes of unbounded size, run in rounds of one bounded statement each (docs/database-cost.md#budgets). */
import { inArray, type SQL } from "drizzle-orm";
import type { SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import { qb } from "./client";

/**
 * `DELETE FROM table WHERE id IN (SELECT id FROM table WHERE where LIMIT limit)`, to prepare once (`rowsAffected` < `limit`: no round left).
 * @example p.prepare(boundedDelete(apiKeys, apiKeys.id, lt(apiKeys.revokedAt, p("before")), 500))
 */
export function boundedDelete(table: SQLiteTable, id: SQLiteColumn, where: SQL | undefined, limit: number) {
  return qb.delete(table).where(inArray(id, qb.select({ id }).from(table).where(where).limit(limit)));
}
