/**
 * Drizzle over a libSQL client: the one database handle the app is given.
 * Entry points create the libSQL `Client` (embedded file on Node, Hrana over
 * HTTP on Workers) and pass it here; nothing in `src/` opens a database itself.
 */
import type { Client } from "@libsql/client";
import { drizzle, type LibSQLDatabase } from "drizzle-orm/libsql";
import * as schema from "./schema";

/** The app's database handle: Drizzle with the Petstore schema and snake_case columns. */
export type Database = LibSQLDatabase<typeof schema> & { $client: Client };

/**
 * The client-less query builder every statement is built on, once per process
 * (STYLE.md §5): `qb.select(…).prepare()` at module level, run through the
 * request's client with src/db/plan.ts (`execute`, `run`, `read`).
 */
export const qb = drizzle.mock({ schema, casing: "snake_case" });

/** Wrap a libSQL client in Drizzle with the project's schema and casing. */
export function createDatabase(client: Client): Database {
  return drizzle({ client, schema, casing: "snake_case" });
}
