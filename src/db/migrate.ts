/** Applies the Drizzle migrations (`drizzle/`) through the database port, once even when processes start together (docs/architecture.md#migrations). */
import { fileURLToPath } from "node:url";
import { readMigrationFiles } from "drizzle-orm/migrator";
import type { Database } from "./client";

/** Absolute path of `drizzle/`: this module runs from src/db/ (tsx, tests) or dist/node/server.mjs, both two levels below the root. */
export const MIGRATIONS_FOLDER = fileURLToPath(new URL("../../drizzle", import.meta.url));

/** Drizzle's bookkeeping table as its migrators create it, the index that lets one batch of records win, and the newest record. */
const BOOKKEEPING = {
  table: "CREATE TABLE IF NOT EXISTS __drizzle_migrations (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)",
  index: "CREATE UNIQUE INDEX IF NOT EXISTS __drizzle_migrations_created_at ON __drizzle_migrations (created_at)",
  last: "SELECT max(created_at) AS last FROM __drizzle_migrations",
};

/** The newest migration recorded (its `folderMillis`), creating the bookkeeping first if needed; undefined when none is. */
async function lastApplied(db: Database): Promise<number | undefined> {
  const [, , last] = await db.batch([BOOKKEEPING.table, BOOKKEEPING.index, BOOKKEEPING.last], "write");
  const value = last!.rows[0]?.last;
  return value === null || value === undefined ? undefined : Number(value);
}

/** Apply every pending migration, in order, in one write batch; resolves with how many this call applied (0 when another process had). @throws the driver's error (nothing applied). */
export async function applyMigrations(db: Database): Promise<number> {
  const migrations = readMigrationFiles({ migrationsFolder: MIGRATIONS_FOLDER });
  for (;;) {
    const last = await lastApplied(db);
    const pending = migrations.filter((m) => last === undefined || last < m.folderMillis);
    if (pending.length === 0) return 0;
    try {
      await db.batch(
        [
          ...pending.map((m) => ({ sql: "INSERT INTO __drizzle_migrations (hash, created_at) VALUES (?, ?)", args: [m.hash, m.folderMillis] })),
          // drizzle-kit's PRAGMA foreign_keys=OFF/ON does nothing inside a transaction; checks deferred to COMMIT do.
          "PRAGMA defer_foreign_keys = ON",
          ...pending.flatMap((m) => m.sql.filter((statement) => statement.trim())),
        ],
        "write",
      );
      return pending.length;
    } catch (error) {
      // Another process recorded the first of them meanwhile: read again. Else the migration failed.
      const now = await lastApplied(db);
      if (now === undefined || now < pending[0]!.folderMillis) throw error;
    }
  }
}
