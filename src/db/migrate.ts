/**
 * Apply the committed Drizzle migrations (`drizzle/`) once, even when several
 * processes start at the same moment: reading what is applied and applying the
 * rest are one write transaction (`BEGIN IMMEDIATE`), so a second migrator
 * waits, then finds nothing to do. Keeps Drizzle's `__drizzle_migrations`
 * bookkeeping. Node only (reads the files from disk); embedded files and
 * libSQL servers alike. Why not Drizzle's migrator: docs/architecture.md, "Migrations".
 */
import { fileURLToPath } from "node:url";
import type { Client } from "@libsql/client";
import { desc, sql, TransactionRollbackError } from "drizzle-orm";
import { drizzle } from "drizzle-orm/libsql";
import { readMigrationFiles } from "drizzle-orm/migrator";
import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * Absolute path of the committed migrations folder. This module runs from
 * src/db/ (tsx, tests) or bundled into dist/node/server.mjs (`npm start`):
 * both are two levels below the project root.
 */
export const MIGRATIONS_FOLDER = fileURLToPath(new URL("../../drizzle", import.meta.url));

/**
 * Drizzle's bookkeeping table, as its migrators create it (below). Not in
 * schema.ts: it is no table of the app, and drizzle-kit must not generate it.
 */
const appliedMigrations = sqliteTable("__drizzle_migrations", {
  id: integer(),
  hash: text().notNull(),
  /** The migration folder's timestamp, ms (declared `numeric`; bound and read as an integer, as Drizzle's migrators do). */
  createdAt: integer("created_at"),
});

/**
 * Apply every pending migration, in order, in one write transaction with the
 * check of what is applied. Resolves with the number of migrations applied
 * (0 when another process had applied them).
 * @throws the driver's error when a statement fails (nothing is applied then).
 */
export async function applyMigrations(client: Client): Promise<number> {
  const migrations = readMigrationFiles({ migrationsFolder: MIGRATIONS_FOLDER });
  try {
    // Drizzle's libSQL transaction is the client's default, "write" (`BEGIN IMMEDIATE`).
    return await drizzle({ client }).transaction(async (tx) => {
      // A write first, so that the transaction holds the write lock before it reads.
      await tx.run(sql`CREATE TABLE IF NOT EXISTS ${appliedMigrations} (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)`);
      const [last] = await tx.select({ createdAt: appliedMigrations.createdAt }).from(appliedMigrations).orderBy(desc(appliedMigrations.createdAt)).limit(1);
      const lastApplied = last === undefined ? undefined : (last.createdAt ?? 0);
      const pending = migrations.filter((m) => lastApplied === undefined || lastApplied < m.folderMillis);
      if (pending.length === 0) tx.rollback();
      // drizzle-kit brackets table rebuilds with PRAGMA foreign_keys=OFF/ON, which do nothing
      // inside a transaction; deferring the checks to COMMIT is what does work there.
      await tx.run(sql`PRAGMA defer_foreign_keys = ON`);
      for (const migration of pending) {
        for (const statement of migration.sql) if (statement.trim()) await tx.run(sql.raw(statement));
        await tx.insert(appliedMigrations).values({ hash: migration.hash, createdAt: migration.folderMillis });
      }
      return pending.length;
    });
  } catch (error) {
    if (error instanceof TransactionRollbackError) return 0;
    throw error;
  }
}
