/**
 * Statements and write plans (docs/architecture.md#writes-one-batch-named-plans): queries prepared once per process with typed placeholders
 * (`params<V>()`), and plans of named steps sent as one batch, results by name; `run`, `read` and `execute` take exactly their values.
 */
import type { InArgs, InStatement, ResultSet } from "@libsql/client";
import { activeTraceparent } from "../telemetry/spans";
import { fillPlaceholders, type Placeholder, type SQL, sql } from "drizzle-orm";
import type { PreparedQueryConfig, SQLitePreparedQuery } from "drizzle-orm/sqlite-core";
import type { CommittedEvent, Database } from "./client";

// biome-ignore lint/suspicious/noExplicitAny: any prepared query, whatever its result type.
type Prepared = SQLitePreparedQuery<any>;
/** A type only: no such property exists. */
declare const VALUES: unique symbol;

/** A prepared query whose placeholders take the values `V` (built with `params<V>()`). */
export type Query<V, R extends Prepared = Prepared> = R & { readonly [VALUES]: (values: V) => V };
// biome-ignore lint/suspicious/noExplicitAny: any query, whatever its values.
type AnyQuery = Query<any>;

/** The values a query takes. */
export type ValuesOf<Q> = Q extends { readonly [VALUES]: (values: infer V) => unknown } ? V : never;

/** What a prepared query's `execute()` returns: typed rows, or the driver's `ResultSet` for a plain write. */
export type ResultOf<Q> = Q extends { execute(values?: Record<string, unknown>): Promise<infer R> } ? R : never;

type Builder = { prepare(): Prepared };

/**
 * Values `V`: `p(name)` is `sql.placeholder(name)`; `p.prepare`, `p.statement` and `p.guarded` are `builder.prepare()`, `statement`, `guarded` taking `V`.
 * @example const p = params<{ petId: number }>(); const byId = p.prepare(qb.select().from(pets).where(eq(pets.id, p("petId"))));
 */
export interface Params<V> {
  <K extends keyof V & string>(name: K): Placeholder<K, V[K]>;
  prepare<B extends Builder>(builder: B): Query<V, ReturnType<B["prepare"]>>;
  statement<B extends Builder>(builder: B): Step<Query<V, ReturnType<B["prepare"]>>>;
  guarded<B extends Builder>(build: (changed: SQL) => B): Step<Query<V, ReturnType<B["prepare"]>>>;
}

/** Typed placeholders, statements and steps for the values `V` (see `Params`). */
export function params<V extends object>(): Params<V> {
  const prepare = (builder: Builder) => builder.prepare() as AnyQuery;
  return Object.assign((name: string) => sql.placeholder(name), {
    prepare,
    statement: (builder: Builder) => statement(prepare(builder)),
    guarded: (build: (changed: SQL) => Builder) => guarded((changed) => prepare(build(changed))),
  }) as Params<V>;
}

/** `A` with no key beyond those of `V`: an extra value does not compile. */
type Exactly<V, A> = A & { [K in Exclude<keyof A, keyof V>]: never };

/** One step of a plan: a prepared statement, whether the step before guards it, and whether it is an outbox insert. */
export interface Step<Q extends AnyQuery = AnyQuery> {
  readonly query: Q;
  /** Takes effect only when the step just before it in the plan changed one row. */
  readonly guarded: boolean;
  /** An outbox insert returning the `type` and `data` of the events it inserted. */
  readonly outbox: boolean;
}

/** The guard of `guarded` steps: true when the statement just before changed exactly one row. */
const CHANGED: SQL = sql`changes() = 1`;

/** A step running `query` with no condition on other steps. */
export function statement<Q extends AnyQuery>(query: Q): Step<Q> {
  return { query, guarded: false, outbox: false };
}

/** A step built by `build(changed)`, `changed` the SQL condition "the step just before it changed one row" (e.g. an insert-select's WHERE). */
export function guarded<Q extends AnyQuery>(build: (changed: SQL) => Q): Step<Q> {
  return { query: build(CHANGED), guarded: true, outbox: false };
}

/** `step` marked as an outbox insert: its query must return a `{ type, data }` row per event inserted (`insertEventRows`, src/db/events.ts). */
export function outbox<Q extends AnyQuery & SQLitePreparedQuery<PreparedQueryConfig & { execute: { type: string; data: string }[] }>>(
  step: Step<Q> | Q,
): Step<Q> {
  return "query" in step && "outbox" in step ? { ...step, outbox: true } : { query: step as Q, guarded: false, outbox: true };
}

/** A plan: named steps in the order they run. */
export type Steps = Record<string, Step>;

/** The results of a plan's steps, by name, each typed by its query. */
export type PlanResults<S extends Steps> = { [K in keyof S]: ResultOf<S[K]["query"]> };

type Intersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never;

/** The values a plan takes: those of all its statements. */
export type PlanValues<S extends Steps> = Intersection<{ [K in keyof S]: ValuesOf<S[K]["query"]> }[keyof S]>;

/** A checked plan (see `plan`). */
export interface Plan<S extends Steps> {
  readonly steps: S;
  /** The step names, in the order the steps run. */
  readonly names: readonly string[];
  /** The step names joined by spaces: the `db.query.summary` of its batches (src/db/traced.ts). */
  readonly summary: string;
}

/** A plan with its values, for `runEach` (`withValues`). */
export type PlanRun<S extends Steps = Steps> = readonly [Plan<S>, PlanValues<S>];

/** Freeze a plan (a `guarded` step is guarded by the one before it). @throws Error when the first step is guarded (it would read another batch's changes). */
export function plan<S extends Steps>(steps: S): Plan<S> {
  const names = Object.keys(steps);
  if (steps[names[0]!]?.guarded) throw new Error(`plan: the first step "${names[0]}" is guarded, but no step runs before it`);
  return { steps, names, summary: names.join(" ") };
}

/** `p` with exactly its `values`, for `runEach`. */
export function withValues<S extends Steps, A extends PlanValues<S>>(p: Plan<S>, values: Exactly<PlanValues<S>, A>): PlanRun<S> {
  return [p, values];
}

/** A placeholder every write gets a value for (`runEach`): the active span as a W3C `traceparent`, or null (traces off). */
export const writeTraceparent: Placeholder<"traceparent"> = sql.placeholder("traceparent");

/** The statement a step sends for `values` (one value per placeholder name). */
function bind(step: Step, values: unknown): InStatement {
  const { sql: text, params } = step.query.getQuery();
  return { sql: text, args: fillPlaceholders(params, values as Record<string, unknown>) as InArgs };
}

/** Each run's results by name, from `results` in order; the events its outbox steps inserted appended to `committed` (if any), in commit order. */
function resultsOf<S extends Steps>(runs: readonly (readonly [Plan<S>, unknown])[], results: ResultSet[], committed?: CommittedEvent[]): PlanResults<S>[] {
  let offset = 0;
  return runs.map(([p]) => {
    const out: Record<string, unknown> = {};
    for (const name of p.names) {
      const step = p.steps[name]!;
      const result = results[offset++]!;
      if (committed && step.outbox) {
        for (const row of result.rows) committed.push({ type: String(row.type), data: JSON.parse(String(row.data)) as Record<string, unknown> });
      }
      out[name] = step.query.mapResult(result, true);
    }
    return out as PlanResults<S>;
  });
}

/** `db` whose plans append the events they commit to `committed` (the route of committed events, src/middleware/after-writes.ts). */
export function keepingCommits(db: Database, committed: CommittedEvent[]): Database {
  return { execute: (statement) => db.execute(statement), batch: (statements, mode, summary) => db.batch(statements, mode, summary), committed };
}

/** `db` with each of its round trips (`execute`, `batch`) run through `around`. */
export function aroundRoundTrips(db: Database, around: <T>(call: () => Promise<T>) => Promise<T>): Database {
  return {
    execute: (statement) => around(() => db.execute(statement)),
    batch: (statements, mode, summary) => around(() => db.batch(statements, mode, summary)),
  };
}

/** Run plans, each with its values, in order, as ONE write transaction (summary: the distinct plans' step names, comma-separated): each one's results by name. @throws LibsqlError (nothing written). */
export async function runEach<S extends Steps>(db: Database, runs: readonly PlanRun<S>[]): Promise<PlanResults<S>[]> {
  const traced = { [writeTraceparent.name]: activeTraceparent() };
  const statements = runs.flatMap(([p, values]) => p.names.map((name) => bind(p.steps[name]!, { ...(values as object), ...traced })));
  const results = await db.batch(statements, "write", [...new Set(runs.map(([p]) => p.summary))].join(", "));
  return resultsOf(runs, results, db.committed);
}

/** Run `p` as one write transaction: each step's result by name (typed rows, or a `ResultSet` for a plain write). @throws LibsqlError (nothing written). */
export async function run<S extends Steps, A extends PlanValues<S>>(db: Database, p: Plan<S>, values: Exactly<PlanValues<S>, A>): Promise<PlanResults<S>> {
  return (await runEach(db, [[p, values]]))[0]!;
}

/** Run `p`'s statements as one read transaction (one snapshot, one round trip); results by name. */
export async function read<S extends Steps, A extends PlanValues<S>>(db: Database, p: Plan<S>, values: Exactly<PlanValues<S>, A>): Promise<PlanResults<S>> {
  const statements = p.names.map((name) => bind(p.steps[name]!, values));
  const results = await db.batch(statements, "read", p.summary);
  return resultsOf([[p, values]], results)[0]!;
}

/** Run one prepared query with exactly its `values`: what its `execute()` returns (typed rows, or a `ResultSet`). */
export async function execute<Q extends AnyQuery, A extends ValuesOf<Q>>(db: Database, query: Q, values: Exactly<ValuesOf<Q>, A>): Promise<ResultOf<Q>> {
  const result = await db.execute(bind(statement(query), values));
  return query.mapResult(result, true) as ResultOf<Q>;
}

/** Resolves when `db` answers `SELECT 1` (a health check). @throws the driver's error. */
export async function ping(db: Database): Promise<void> {
  await db.execute("SELECT 1");
}
