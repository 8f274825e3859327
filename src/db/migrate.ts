/**
 * Apply the committed Drizzle migrations (`drizzle/`) to a database.
 * Node only: reads the migration files from disk. Works for embedded files and
 * for a libSQL server over HTTP alike.
 */
import { fileURLToPath } from "node:url";
import { migrate } from "drizzle-orm/libsql/migrator";
import type { Database } from "./client";

/**
 * Absolute path of the committed migrations folder. This module runs from
 * src/db/ (tsx, tests) or bundled into dist/node/server.mjs (`npm start`):
 * both are two levels below the project root.
 */
export const MIGRATIONS_FOLDER = fileURLToPath(new URL("../../drizzle", import.meta.url));

/** Apply every pending migration, in order, each in one transaction. */
export async function applyMigrations(db: Database): Promise<void> {
  await migrate(db, { migrationsFolder: MIGRATIONS_FOLDER });
}
