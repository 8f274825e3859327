/**
 * The one place where Drizzle-built statements reach the libSQL client as a
 * batch. Every write of the API is one `client.batch(statements, "write")`:
 * one round trip and one transaction (API.md §3: each write is one atomic
 * database batch). Drizzle's own `db.batch` cannot choose the transaction
 * mode (it sends "deferred"), so batches are sent here.
 *
 * Statements are Drizzle prepared queries (`db.select(…).prepare()`, with
 * `sql.placeholder` for per-request values) bound to their values with `step`:
 * the SQL text is built once per database (`perDatabase`), binding only fills
 * placeholders (~0.1 µs, against ~60 µs to build a query), and each step's
 * result is read back by the prepared query itself, so rows have the types
 * of the schema (https://orm.drizzle.team/docs/perf-queries). Later statements
 * of a batch are made conditional on earlier ones with `changes()` guards, so
 * the batch as a whole either applies or changes nothing, without interactive
 * transactions.
 */
import type { InArgs, InStatement, ResultSet } from "@libsql/client";
import { fillPlaceholders, getTableName } from "drizzle-orm";
import type { PreparedQueryConfig, SQLitePreparedQuery } from "drizzle-orm/sqlite-core";
import type { Database } from "./client";
import { isRecordingCommits, recordCommitted, type CommittedEvent } from "./commit-log";
import { events } from "./schema";

/** One statement of a batch: the SQL and arguments sent, and how its result set is read. */
export interface BatchStep<R> {
  readonly statement: InStatement;
  /** Typed result of this statement, from its result set. */
  readonly read: (result: ResultSet) => R;
}

/** The results of `steps`, in order, each typed by its step. */
export type BatchResults<S extends readonly BatchStep<unknown>[]> = { -readonly [K in keyof S]: S[K] extends BatchStep<infer R> ? R : never };

/**
 * Bind a Drizzle prepared query to the values of its placeholders, as a batch step.
 * The step's result is what the query's own `execute()` returns: typed rows for a
 * select or `returning`, the driver's `ResultSet` (`rowsAffected`) for a plain write.
 * @throws Error (Drizzle) when a placeholder has no value in `values`.
 */
export function step<T extends PreparedQueryConfig>(query: SQLitePreparedQuery<T>, values: Record<string, unknown> = {}): BatchStep<T["execute"]> {
  const { sql, params } = query.getQuery();
  return { statement: { sql, args: fillPlaceholders(params, values) as InArgs }, read: (result) => query.mapResult(result, true) as T["execute"] };
}

/**
 * `build(db)`, built once per database handle and kept while the handle lives:
 * for prepared queries, whose SQL is then built once (Node: once per process;
 * Workers: once per request, as each request has its own handle).
 */
export function perDatabase<T>(build: (db: Database) => T): (db: Database) => T {
  const built = new WeakMap<Database, T>();
  return (db) => {
    let value = built.get(db);
    if (value === undefined) {
      value = build(db);
      built.set(db, value);
    }
    return value;
  };
}

/**
 * Prepared variants of one query, one per combination of `flags` (which
 * optional filters apply — a fixed WHERE per variant keeps the indexes
 * usable), each built on first use, once per database handle.
 * `build(db, ...flags)` builds the variant.
 */
export function preparedVariants<F extends boolean[], T>(build: (db: Database, ...flags: F) => T): (db: Database, ...flags: F) => T {
  const variants = perDatabase(() => new Map<string, T>());
  return (db, ...flags) => {
    const built = variants(db);
    const key = flags.map((flag) => (flag ? "1" : "0")).join("");
    const variant = built.get(key) ?? build(db, ...flags);
    built.set(key, variant);
    return variant;
  };
}

/** An outbox insert (API.md §6): `INSERT INTO events …` as Drizzle renders it (`insert into "events" …`). */
const OUTBOX_INSERT = new RegExp(`^\\s*insert\\s+into\\s+"?${getTableName(events)}"?[\\s(]`, "i");

function isOutboxInsert(statement: InStatement): boolean {
  return OUTBOX_INSERT.test(typeof statement === "string" ? statement : statement.sql);
}

/**
 * Run `steps` as one atomic write transaction (`batch(…, "write")`: one round
 * trip, `BEGIN IMMEDIATE`); one typed result each. While the request keeps a
 * commit log (src/db/commit-log.ts), every outbox insert of the batch returns
 * the rows it inserted (`RETURNING type, data`, added here) and they are
 * recorded there as committed: exactly the changes the batch made, since each
 * event is written only when its change happened.
 * @throws the driver's error (LibsqlError) when a statement fails; then nothing was written.
 */
export async function writeBatch<const S extends readonly BatchStep<unknown>[]>(db: Database, steps: S): Promise<BatchResults<S>> {
  const recording = isRecordingCommits();
  const outbox = steps.map(({ statement }) => recording && isOutboxInsert(statement));
  const sent = steps.map(({ statement }, index) => {
    if (!outbox[index] || typeof statement === "string" || /\breturning\b/i.test(statement.sql)) return statement;
    return { sql: `${statement.sql} returning "type", "data"`, args: statement.args };
  });
  const results = await db.$client.batch(sent, "write");
  if (recording) {
    const committed: CommittedEvent[] = [];
    results.forEach((result, index) => {
      if (!outbox[index]) return;
      for (const row of result.rows) committed.push({ type: String(row.type), data: JSON.parse(String(row.data)) as Record<string, unknown> });
    });
    recordCommitted(committed);
  }
  return steps.map((s, index) => s.read(results[index]!)) as BatchResults<S>;
}

/** Run `steps` as one read transaction (one snapshot, one round trip); one typed result each. */
export async function readBatch<const S extends readonly BatchStep<unknown>[]>(db: Database, steps: S): Promise<BatchResults<S>> {
  const results = await db.$client.batch(
    steps.map((s) => s.statement),
    "read",
  );
  return steps.map((s, index) => s.read(results[index]!)) as BatchResults<S>;
}

/**
 * True when a libSQL/SQLite error is a constraint violation. Matches by prefix
 * (`SQLITE_CONSTRAINT…`) because the embedded driver and sqld report different
 * extended codes for the same violation.
 */
export function isConstraintError(error: unknown): boolean {
  let e: unknown = error;
  for (let depth = 0; e && depth < 4; depth++) {
    const code = (e as { code?: unknown }).code;
    const extended = (e as { extendedCode?: unknown }).extendedCode;
    if (String(code).startsWith("SQLITE_CONSTRAINT") || String(extended).startsWith("SQLITE_CONSTRAINT")) return true;
    if (/UNIQUE constraint failed|CHECK constraint failed|FOREIGN KEY constraint failed/.test(String((e as Error).message))) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
