/**
 * Deprecated batch helpers, kept only while the webhook services still use
 * them: statements bound with `step`, sent with `writeBatch`/`readBatch` and
 * read back by position. Everything else uses src/db/plan.ts (statements built
 * once on `qb`, plans of named steps).
 */
import type { InArgs, InStatement, ResultSet } from "@libsql/client";
import { fillPlaceholders, getTableName } from "drizzle-orm";
import type { PreparedQueryConfig, SQLitePreparedQuery } from "drizzle-orm/sqlite-core";
import type { Database } from "./client";
import { isRecordingCommits, recordCommitted, type CommittedEvent } from "./commit-log";
import { events } from "./schema";

/**
 * One statement of a batch: the SQL and arguments sent, and how its result set is read.
 * @deprecated Use src/db/plan.ts; kept until the webhook services move to it.
 */
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
 * @deprecated Use src/db/plan.ts (`statement`, `plan`, `run`).
 */
export function step<T extends PreparedQueryConfig>(query: SQLitePreparedQuery<T>, values: Record<string, unknown> = {}): BatchStep<T["execute"]> {
  const { sql, params } = query.getQuery();
  return { statement: { sql, args: fillPlaceholders(params, values) as InArgs }, read: (result) => query.mapResult(result, true) as T["execute"] };
}

/**
 * `build(db)`, built once per database handle and kept while the handle lives:
 * for prepared queries, whose SQL is then built once (Node: once per process;
 * Workers: once per request, as each request has its own handle).
 * @deprecated Build statements once on `qb` (src/db/client.ts).
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
 * @deprecated Use src/db/plan.ts `run`.
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

/**
 * Run `steps` as one read transaction (one snapshot, one round trip); one typed result each.
 * @deprecated Use src/db/plan.ts `read`.
 */
export async function readBatch<const S extends readonly BatchStep<unknown>[]>(db: Database, steps: S): Promise<BatchResults<S>> {
  const results = await db.$client.batch(
    steps.map((s) => s.statement),
    "read",
  );
  return steps.map((s, index) => s.read(results[index]!)) as BatchResults<S>;
}
