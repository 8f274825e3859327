/**
 * Apply the committed Drizzle migrations (`drizzle/`) once, even when several
 * processes start at the same moment, through the database port: read what is
 * applied, then record and apply the rest in one write batch whose records
 * come first. A unique index on the records' `created_at` makes a second
 * migrator's batch fail whole (and it reads again), so no migration runs
 * twice. Keeps Drizzle's `__drizzle_migrations` bookkeeping. Node only (reads
 * the files from disk). Why not Drizzle's migrator: docs/architecture.md, "Migrations".
 */
import { fileURLToPath } from "node:url";
import { readMigrationFiles } from "drizzle-orm/migrator";
import type { Database } from "./client";

/**
 * Absolute path of the committed migrations folder. This module runs from
 * src/db/ (tsx, tests) or bundled into dist/node/server.mjs (`npm start`):
 * both are two levels below the project root.
 */
export const MIGRATIONS_FOLDER = fileURLToPath(new URL("../../drizzle", import.meta.url));

/** Drizzle's bookkeeping table as its migrators create it, and the index that lets one batch of records win. */
const BOOKKEEPING = [
  "CREATE TABLE IF NOT EXISTS __drizzle_migrations (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)",
  "CREATE UNIQUE INDEX IF NOT EXISTS __drizzle_migrations_created_at ON __drizzle_migrations (created_at)",
  "SELECT max(created_at) AS last FROM __drizzle_migrations",
];

/**
 * Apply every pending migration, in order, in one write batch. Resolves with
 * the number of migrations this call applied (0 when another process had).
 * @throws the driver's error when a statement fails (nothing is applied then).
 */
export async function applyMigrations(db: Database): Promise<number> {
  const migrations = readMigrationFiles({ migrationsFolder: MIGRATIONS_FOLDER });
  for (;;) {
    const results = await db.batch(BOOKKEEPING, "write");
    const last = results[2]!.rows[0]?.last;
    const pending = migrations.filter((m) => last === null || last === undefined || Number(last) < m.folderMillis);
    if (pending.length === 0) return 0;
    try {
      await db.batch(
        [
          ...pending.map((m) => ({ sql: "INSERT INTO __drizzle_migrations (hash, created_at) VALUES (?, ?)", args: [m.hash, m.folderMillis] })),
          // drizzle-kit brackets table rebuilds with PRAGMA foreign_keys=OFF/ON, which do nothing
          // inside a transaction; deferring the checks to COMMIT is what does work there.
          "PRAGMA defer_foreign_keys = ON",
          ...pending.flatMap((m) => m.sql.filter((statement) => statement.trim())),
        ],
        "write",
      );
      return pending.length;
    } catch (error) {
      // Another process recorded the first of them meanwhile: read again. Else the migration failed.
      const now = (await db.batch(BOOKKEEPING, "write"))[2]!.rows[0]?.last;
      if (now === null || now === undefined || Number(now) < pending[0]!.folderMillis) throw error;
    }
  }
}
