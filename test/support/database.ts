/**
 * Tests open databases exactly as the server and the scripts do
 * (`openDatabase`, src/db/open.ts): migrated, with the same pragmas.
 */
import type { Database } from "../../src/db/client";
import { databaseSettings, openDatabase } from "../../src/db/open";

/** The Drizzle handle of the database at `url` (`file:…` or a libSQL server URL), migrated. */
export async function openTestDatabase(url: string): Promise<Database> {
  return (await openDatabase(databaseSettings({ DATABASE_URL: url }))).db;
}
