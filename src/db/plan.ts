/**
 * Statements and write plans (docs/architecture.md#writes-one-batch-named-plans). A statement is a Drizzle prepared
 * query built once per process on `qb` (src/db/client.ts); a write plan is an
 * object of named steps, in the order they run, sent as one atomic batch
 * (docs/api.md#stock-and-ordering), whose results come back by name. `guarded` steps take effect
 * only when the step they name with `.after(name)` (which `plan` checks runs
 * just before) changed a row; `outbox` steps' events go to the handle's log of
 * committed events (`Database.committed`). Design: docs/architecture.md, "Writes".
 */
import type { InArgs, InStatement, ResultSet } from "@libsql/client";
import { fillPlaceholders, type SQL, sql } from "drizzle-orm";
import type { PreparedQueryConfig, SQLitePreparedQuery } from "drizzle-orm/sqlite-core";
import type { CommittedEvent, Database } from "./client";

// biome-ignore lint/suspicious/noExplicitAny: any prepared query, whatever its result type.
type Prepared = SQLitePreparedQuery<any>;

/** What a prepared query's `execute()` returns: typed rows, or the driver's `ResultSet` for a plain write. */
export type ResultOf<Q> = Q extends SQLitePreparedQuery<infer T extends PreparedQueryConfig> ? T["execute"] : never;

/** One step of a plan: a prepared statement, the step whose changes guard it, and whether it is an outbox insert. */
export interface Step<Q extends Prepared = Prepared> {
  readonly query: Q;
  /** The step that must run just before this one: its `changes()` guard this step. */
  readonly after?: string;
  /** An outbox insert returning the `type` and `data` of the events it inserted. */
  readonly outbox: boolean;
}

/** A step whose guard still needs the name of the step it follows. */
export interface GuardedStep<Q extends Prepared> {
  /** The step whose changes guard this one; it must run just before it (`plan` checks). */
  after(name: string): Step<Q>;
}

/** The guard of `guarded` steps: true when the statement just before changed exactly one row. */
const CHANGED: SQL = sql`changes() = 1`;

/** A step running `query` with no condition on other steps. */
export function statement<Q extends Prepared>(query: Q): Step<Q> {
  return { query, outbox: false };
}

/**
 * A step built by `build(changed)`, where `changed` is the SQL condition
 * "the step just before changed one row"; name that step with `.after(name)`.
 * @example guarded((changed) => qb.insert(orders).select(…where(and(…, changed)))).after("take")
 */
export function guarded<Q extends Prepared>(build: (changed: SQL) => Q): GuardedStep<Q> {
  const query = build(CHANGED);
  return { after: (name) => ({ query, after: name, outbox: false }) };
}

/** The row an outbox insert returns for each event it inserted (`.returning({ type: events.type, data: events.data })`). */
export interface OutboxRow {
  type: string;
  data: string;
}

/** `step` marked as an outbox insert: its query must return `OutboxRow`s. */
export function outbox<Q extends SQLitePreparedQuery<PreparedQueryConfig & { execute: OutboxRow[] }>>(step: Step<Q> | Q): Step<Q> {
  return "query" in step && "outbox" in step ? { ...step, outbox: true } : { query: step as Q, outbox: true };
}

/** A plan: named steps in the order they run. */
export type Steps = Record<string, Step>;

/** The results of a plan's steps, by name, each typed by its query. */
export type PlanResults<S extends Steps> = { [K in keyof S]: ResultOf<S[K]["query"]> };

/** A checked plan (see `plan`). */
export interface Plan<S extends Steps> {
  readonly steps: S;
  /** The step names, in the order the steps run. */
  readonly names: readonly string[];
}

/**
 * Check and freeze a plan: every step built with `guarded(…).after(name)` runs
 * just after the step `name`.
 * @throws Error at build time when a guarded step does not follow the step it names.
 */
export function plan<S extends Steps>(steps: S): Plan<S> {
  const names = Object.keys(steps);
  names.forEach((name, index) => {
    const { after } = steps[name]!;
    if (after !== undefined && names[index - 1] !== after) {
      throw new Error(`plan: step "${name}" is guarded by "${after}", which must run just before it (order: ${names.join(", ")})`);
    }
  });
  return { steps, names };
}

/** The statement a step sends for `values` (one value per placeholder name). */
function bind(step: Step, values: Record<string, unknown>): InStatement {
  const { sql: text, params } = step.query.getQuery();
  return { sql: text, args: fillPlaceholders(params, values) as InArgs };
}

function readResults<S extends Steps>(p: Plan<S>, results: ResultSet[], offset: number): PlanResults<S> {
  const out: Record<string, unknown> = {};
  p.names.forEach((name, index) => {
    out[name] = p.steps[name]!.query.mapResult(results[offset + index]!, true);
  });
  return out as PlanResults<S>;
}

/** Append the events the outbox steps of `runs` inserted to `committed`, in commit order. */
function recordOutbox<S extends Steps>(
  committed: CommittedEvent[],
  runs: readonly (readonly [Plan<S>, Record<string, unknown>])[],
  results: ResultSet[],
): void {
  let offset = 0;
  for (const [p] of runs) {
    for (const name of p.names) {
      if (p.steps[name]!.outbox) {
        for (const row of results[offset]!.rows) committed.push({ type: String(row.type), data: JSON.parse(String(row.data)) as Record<string, unknown> });
      }
      offset += 1;
    }
  }
}

/**
 * Run several plans, each with its values, as ONE atomic write transaction
 * (`batch(…, "write")`: one round trip, `BEGIN IMMEDIATE`), in order.
 * @returns each plan's results by name, in the order given.
 * @throws the driver's error (LibsqlError) when a statement fails; then nothing was written.
 */
export async function runEach<S extends Steps>(db: Database, runs: readonly (readonly [Plan<S>, Record<string, unknown>])[]): Promise<PlanResults<S>[]> {
  const statements = runs.flatMap(([p, values]) => p.names.map((name) => bind(p.steps[name]!, values)));
  const results = await db.batch(statements, "write");
  if (db.committed) recordOutbox(db.committed, runs, results);
  let offset = 0;
  return runs.map(([p]) => {
    const out = readResults(p, results, offset);
    offset += p.names.length;
    return out;
  });
}

/**
 * Run `p` with `values` (one per placeholder name) as one atomic write transaction.
 * @returns each step's result by name: typed rows, or a `ResultSet` (`rowsAffected`) for a plain write.
 * @throws the driver's error (LibsqlError) when a statement fails; then nothing was written.
 */
export async function run<S extends Steps>(db: Database, p: Plan<S>, values: Record<string, unknown> = {}): Promise<PlanResults<S>> {
  const [results] = await runEach(db, [[p, values]]);
  return results!;
}

/** Run `p`'s statements as one read transaction (one snapshot, one round trip); results by name. */
export async function read<S extends Steps>(db: Database, p: Plan<S>, values: Record<string, unknown> = {}): Promise<PlanResults<S>> {
  const results = await db.batch(
    p.names.map((name) => bind(p.steps[name]!, values)),
    "read",
  );
  return readResults(p, results, 0);
}

/**
 * Run one prepared query (built once, on `qb`) on `db` with `values`.
 * @returns what the query's `execute()` returns (typed rows, or a `ResultSet`).
 */
export async function execute<Q extends Prepared>(db: Database, query: Q, values: Record<string, unknown> = {}): Promise<ResultOf<Q>> {
  const result = await db.execute(bind(statement(query), values));
  return query.mapResult(result, true) as ResultOf<Q>;
}

/** Resolves when `db` answers `SELECT 1` (a health check). @throws the driver's error. */
export async function ping(db: Database): Promise<void> {
  await db.execute("SELECT 1");
}
