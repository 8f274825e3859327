/** The database port and the client-less query builder (docs/architecture.md#the-database-port). */
import type { InStatement, ResultSet } from "@libsql/client";
import { drizzle } from "drizzle-orm/libsql";
import * as tables from "./schema";

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
   * Run `statements` in order as one transaction ("read": one snapshot; "write": `BEGIN IMMEDIATE`), all or nothing: a result set each.
   * A write batch must not read `changes()` or `last_insert_rowid()` before its own first write (docs/architecture.md#group-commit).
   * @param summary what the batch does, for traces (a plan's step names); drivers ignore it.
   * @throws LibsqlError (a `LibsqlBatchError` names the failed statement); then nothing was written.
   */
  batch(statements: InStatement[], mode: "read" | "write", summary?: string): Promise<ResultSet[]>;
  /** Where plans append the outbox events this handle committed, in commit order (docs/architecture.md#events-after-a-write); absent outside a write request. */
  readonly committed?: CommittedEvent[];
}

/** The client-less query builder: statements are built on it once per process (docs/architecture.md#writes-one-batch-named-plans), run with src/db/plan.ts. */
export const qb = drizzle.mock({ schema: tables, casing: "snake_case" });
