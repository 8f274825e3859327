/**
 * The database port and the query builder. Services and plans see only the
 * port: `execute` one statement, `batch` statements as one transaction. The
 * drivers behind it (src/db/driver/) are chosen by the entry points: an
 * embedded file on Node, a libSQL server over HTTP on Node and Workers.
 */
import type { InStatement, ResultSet } from "@libsql/client";
import { drizzle } from "drizzle-orm/libsql";
import * as schema from "./schema";

export type { InStatement, ResultSet };

/** One committed outbox event: its type and its data (the resource after the change). */
export interface CommittedEvent {
  type: string;
  data: Record<string, unknown>;
}

/** All the app asks of a database (docs/architecture.md#the-database-port). */
export interface Database {
  /** Run one statement on its own. @throws LibsqlError. */
  execute(statement: InStatement): Promise<ResultSet>;
  /**
   * Run `statements` in order as one transaction: "read" on one snapshot,
   * "write" `BEGIN IMMEDIATE`, all or nothing. A write batch must not read
   * `changes()` or `last_insert_rowid()` before its own first write: the
   * Node drivers may commit it together with other write batches (group commit).
   * @returns one result set per statement.
   * @throws LibsqlError (a `LibsqlBatchError` names the failed statement); then nothing was written.
   */
  batch(statements: InStatement[], mode: "read" | "write"): Promise<ResultSet[]>;
  /**
   * Where plans append the outbox events their write batches committed, in commit order
   * (src/db/plan.ts); set on a request's handle by the app (docs/architecture.md, "Events
   * after a write"), absent elsewhere (then no event is read back).
   */
  readonly committed?: CommittedEvent[];
}

/**
 * The client-less query builder every statement is built on, once per process
 * (docs/architecture.md#writes-one-batch-named-plans): `qb.select(…).prepare()` at module level, run on the
 * request's database with src/db/plan.ts (`execute`, `run`, `read`).
 */
export const qb = drizzle.mock({ schema, casing: "snake_case" });
