/**
 * The Markdown `npm run bench` prints: the Node and `sqld:` rows against the
 * baseline, the `worker:` rows against their floors, and the engine rows.
 * Pure: the rows in, the text out.
 */
import type { Result } from "./drive";
import type { EngineResult } from "./engine";

/** A ratio with two decimals, three below 0.1 (the worker rows), so it never prints as 0.00. */
const ratio = (x: number) => x.toFixed(x < 0.1 ? 3 : 2);

/** The baseline of a run: its rows before and after the scenarios and their means. */
export interface Baseline {
  before: Result;
  after: Result;
  /** Mean req/s of the two rows: the denominator of every "vs baseline". */
  requestsPerSecond: number;
  /** Mean CPU µs per request of the two rows (0 when unmeasured). */
  cpuUsPerRequest: number;
}

/** The baseline measured `before` and `after` the scenarios. */
export function baselineOf(before: Result, after: Result): Baseline {
  return {
    before,
    after,
    requestsPerSecond: (before.requestsPerSecond + after.requestsPerSecond) / 2,
    cpuUsPerRequest: ((before.cpuUsPerRequest ?? 0) + (after.cpuUsPerRequest ?? 0)) / 2,
  };
}

/** `results` with `ratioToBaseline`: req/s over the baseline's mean, three decimals. */
export function withRatios(results: readonly Result[], baseline: Baseline): Result[] {
  return results.map((r) => ({ ...r, ratioToBaseline: Math.round((r.requestsPerSecond / baseline.requestsPerSecond) * 1000) / 1000 }));
}

/** Everything the run's tables show. */
export interface Run {
  connections: number;
  duration: number;
  pets: number;
  /** `process.version` of the bench. */
  node: string;
  baseline: Baseline;
  /** Rows with their ratios (`withRatios`): Node, `sqld:`, `worker:` and floor rows. */
  results: readonly Result[];
  peakRssMb: number;
}

const isWorkerRow = (r: Result) => r.scenario.startsWith("worker");

/** The Node rows' table (baseline, Node and `sqld:` rows). */
function nodeTable(run: Run): string[] {
  const base = run.baseline;
  const cpu = (r: Result) => (r.cpuUsPerRequest === undefined ? "– | –" : `${r.cpuUsPerRequest} | ${ratio(r.cpuUsPerRequest / base.cpuUsPerRequest)}`);
  const row = (r: Result, vsBaseline: string) =>
    `| ${r.scenario} | ${r.requestsPerSecond} | ${r.p50Ms} | ${r.p99Ms} | ${vsBaseline} | ${cpu(r)} | ${r.non2xx} |`;
  return [
    `| scenario | req/s | p50 ms | p99 ms | vs baseline | CPU µs/req | CPU vs baseline | non-2xx |`,
    `|---|---:|---:|---:|---:|---:|---:|---:|`,
    ...[base.before, base.after].map((b) => row(b, (b.requestsPerSecond / base.requestsPerSecond).toFixed(2))),
    ...run.results.filter((r) => !isWorkerRow(r)).map((r) => row(r, ratio(r.ratioToBaseline!))),
  ];
}

/** The `worker:` rows' table, each against its floor and plain floor (empty without worker rows). */
function workerTable(results: readonly Result[]): string[] {
  const rows = results.filter(isWorkerRow);
  if (rows.length === 0) return [];
  return [
    "",
    "Worker rows (workerd + sqld, CPU: each one's own workerd processes), driven in turns with their floors (bare Hono Workers, bench/floors/):",
    "",
    `| scenario | req/s | p50 ms | p99 ms | floor | vs floor | CPU µs/req | CPU vs floor | vs plain floor | non-2xx |`,
    `|---|---:|---:|---:|---|---:|---:|---:|---:|---:|`,
    ...rows.map((r) => {
      const f = rows.find((x) => x.scenario === r.floor);
      const plain = rows.find((x) => x.scenario === r.plainFloor);
      const vsFloor = f ? ratio(r.requestsPerSecond / f.requestsPerSecond) : "–";
      const vsPlain = plain ? ratio(r.requestsPerSecond / plain.requestsPerSecond) : "–";
      const cpuVsFloor = f?.cpuUsPerRequest && r.cpuUsPerRequest !== undefined ? ratio(r.cpuUsPerRequest / f.cpuUsPerRequest) : "–";
      return `| ${r.scenario} | ${r.requestsPerSecond} | ${r.p50Ms} | ${r.p99Ms} | ${r.floor ?? "–"} | ${vsFloor} | ${r.cpuUsPerRequest ?? "–"} | ${cpuVsFloor} | ${vsPlain} | ${r.non2xx} |`;
    }),
  ];
}

/** The run's header line, its tables and the server's peak RSS. */
export function formatRun(run: Run): string {
  return [
    `\n${run.connections} connections, ${run.duration} s per scenario, ${run.pets} pets, node ${run.node}\n`,
    ...nodeTable(run),
    ...workerTable(run.results),
    `\nPeak RSS of the server (VmHWM) after all scenarios: ${run.peakRssMb} MB`,
  ].join("\n");
}

/** The engine rows: orders/s of each way, against `@libsql/client`. */
export function formatEngine(engine: EngineResult): string {
  const vsClient = (x: number) => (x / engine.client).toFixed(2);
  return [
    `\nengine (no HTTP; the ${engine.statementsPerOrder} statements of one order placement, 50 orders per transaction, bench/engine.ts):`,
    `| way | orders/s | vs @libsql/client |`,
    `|---|---:|---:|`,
    `| @libsql/client batch (every statement compiled on every call) | ${engine.client} | 1.00 |`,
    `| the app's file driver (each SQL text compiled once) | ${engine.app} | ${vsClient(engine.app)} |`,
    `| libsql-js, each statement prepared once | ${engine.preparedOnce} | ${vsClient(engine.preparedOnce)} |`,
  ].join("\n");
}
