/** For cost tests on a sqld of their own: the rows it has read (its admin API's counters), and events appended to its log behind the API. */
import type { Client } from "@libsql/client";
import type { SqldServer } from "../../scripts/sqld";

/** Rows SQLite has read on `sqld` (started with `admin: true`) since it started. */
export async function rowsRead(sqld: SqldServer): Promise<number> {
  const stats = (await (await fetch(`${sqld.adminUrl}/v1/namespaces/default/stats`)).json()) as { rows_read_count: number };
  return stats.rows_read_count;
}

/**
 * Append `n` events in one statement, the first of type `first`, the others `category.created`: the log as writes leave it (the engine
 * reads the log, whoever wrote it).
 */
export async function appendEvents(db: Client, n: number, first = "category.created"): Promise<void> {
  await db.execute({
    sql: `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
      INSERT INTO events (type, occurred_at, data) SELECT CASE i WHEN 1 THEN ? ELSE 'category.created' END, ?, '{}' FROM n`,
    args: [n, first, new Date().toISOString()],
  });
}
