/**
 * Drizzle over a libSQL client: the one database handle the app is given.
 * Entry points create the libSQL `Client` (embedded file on Node, Hrana over
 * HTTP on Workers) and pass it here; nothing in `src/` opens a database itself.
 */
import type { Client } from "@libsql/client";
import { drizzle, type LibSQLDatabase } from "drizzle-orm/libsql";
import * as schema from "./schema";

/**
 * The app's database handle: Drizzle over one libSQL client, snake_case columns.
 * Statements come from `qb`; the handle carries the client they run on.
 */
export type Database = LibSQLDatabase & { $client: Client };

/**
 * The client-less query builder every statement is built on, once per process
 * (docs/architecture.md#writes-one-batch-named-plans): `qb.select(…).prepare()` at module level, run through the
 * request's client with src/db/plan.ts (`execute`, `run`, `read`).
 */
export const qb = drizzle.mock({ schema, casing: "snake_case" });

/**
 * Wrap a libSQL client in Drizzle with the project's casing. No relational
 * schema: the Worker builds a handle per request, and Drizzle would rebuild
 * the schema's relation tables for each one (the app never uses `db.query`).
 */
export function createDatabase(client: Client): Database {
  return drizzle({ client, casing: "snake_case" });
}
