/**
 * Open an embedded libSQL file database for Node (server, scripts, tests),
 * migrated and tuned for durable concurrent writes.
 *
 * Journal WAL + synchronous=FULL: a transaction is on disk (WAL fsynced) before
 * its batch resolves, so an acknowledged write survives a process crash and a
 * power loss. busy_timeout covers other processes (seed, key scripts) writing
 * the same file. foreign_keys=ON is a second line behind the conditional SQL.
 */
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { createClient, type Client } from "@libsql/client";
import { createDatabase, type Database } from "./client";
import { applyMigrations } from "./migrate";

/** Open `url` (`file:path` or `:memory:`), create its folder, migrate, set pragmas. */
export async function openLocalDatabase(url: string): Promise<Database> {
  if (url.startsWith("file:")) {
    const path = url.slice("file:".length);
    if (path && !path.startsWith(":")) mkdirSync(dirname(path), { recursive: true });
  }
  // One connection: per-connection pragmas then hold for every statement.
  const client: Client = createClient({ url, concurrency: 1 });
  await client.execute("PRAGMA busy_timeout = 5000");
  if (url.startsWith("file:")) await client.execute("PRAGMA journal_mode = WAL");
  const db = createDatabase(client);
  await applyMigrations(db);
  await client.execute("PRAGMA synchronous = FULL");
  await client.execute("PRAGMA foreign_keys = ON");
  return db;
}
