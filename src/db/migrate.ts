/**
 * Apply the committed Drizzle migrations (`drizzle/`) to a database, once,
 * even when several processes start at the same moment.
 * Node only: reads the migration files from disk (drizzle-orm's
 * `readMigrationFiles`). Works for embedded files and libSQL servers alike.
 *
 * Drizzle's own libSQL migrator reads the applied migrations and then applies
 * the pending ones in a second, separate transaction, so two processes
 * starting together both find a migration pending and the second fails on
 * "table already exists". Here the read and the apply are one write
 * transaction (`BEGIN IMMEDIATE`): the second migrator waits for the first
 * (SQLite write lock; sqld serialises write transactions the same way), then
 * finds nothing left to do. The bookkeeping table is Drizzle's
 * (`__drizzle_migrations`: hash, created_at = the folder's timestamp), so
 * databases migrated before keep working, and `drizzle-kit` still reads it.
 */
import { fileURLToPath } from "node:url";
import { readMigrationFiles } from "drizzle-orm/migrator";
import type { Client } from "@libsql/client";

/**
 * Absolute path of the committed migrations folder. This module runs from
 * src/db/ (tsx, tests) or bundled into dist/node/server.mjs (`npm start`):
 * both are two levels below the project root.
 */
export const MIGRATIONS_FOLDER = fileURLToPath(new URL("../../drizzle", import.meta.url));

const TABLE = "__drizzle_migrations";

/**
 * Apply every pending migration, in order, in one write transaction with the
 * check of what is applied. Resolves with the number of migrations applied
 * (0 when another process had applied them).
 * @throws the driver's error when a statement fails (nothing is applied then).
 */
export async function applyMigrations(db: { $client: Client }): Promise<number> {
  const migrations = readMigrationFiles({ migrationsFolder: MIGRATIONS_FOLDER });
  const tx = await db.$client.transaction("write");
  try {
    // A write first, so that the transaction holds the write lock before it reads.
    await tx.execute(`CREATE TABLE IF NOT EXISTS "${TABLE}" (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)`);
    const last = await tx.execute(`SELECT created_at FROM "${TABLE}" ORDER BY created_at DESC LIMIT 1`);
    const lastApplied = last.rows.length ? Number(last.rows[0]![0]) : undefined;
    const pending = migrations.filter((m) => lastApplied === undefined || lastApplied < m.folderMillis);
    if (pending.length === 0) {
      await tx.rollback();
      return 0;
    }
    // drizzle-kit brackets table rebuilds with PRAGMA foreign_keys=OFF/ON, which do nothing
    // inside a transaction; deferring the checks to COMMIT is what does work there.
    await tx.execute("PRAGMA defer_foreign_keys = ON");
    for (const migration of pending) {
      for (const statement of migration.sql) if (statement.trim()) await tx.execute(statement);
      await tx.execute({ sql: `INSERT INTO "${TABLE}" ("hash", "created_at") VALUES (?, ?)`, args: [migration.hash, migration.folderMillis] });
    }
    await tx.commit();
    return pending.length;
  } finally {
    tx.close();
  }
}
