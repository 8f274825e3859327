/**
 * Tests open databases exactly as the server and the scripts do
 * (`openDatabase`, src/db/driver/open.ts): migrated, with the same pragmas.
 */
import type { Client } from "@libsql/client";
import { drizzle } from "drizzle-orm/libsql";
import type { Database } from "../../src/db/client";
import { nodeSettings } from "../../src/config";
import { openDatabase } from "../../src/db/driver/open";

/** A test's database: the port, and `close()` (queued writes commit first). */
export type TestDatabase = Database & { close(): Promise<void> };

/** The database at `url` (`file:…` or a libSQL server URL), migrated. */
export async function openTestDatabase(url: string): Promise<TestDatabase> {
  const opened = await openDatabase(nodeSettings({ DATABASE_URL: url }).database);
  return Object.assign(opened.db, { close: opened.close });
}

/**
 * Drizzle's query API over `db`, for tests that read or write rows directly.
 * Its libSQL session sends single queries with `execute` alone, which the port has.
 */
export function queries(db: Database) {
  return drizzle({ client: db as unknown as Client, casing: "snake_case" });
}
