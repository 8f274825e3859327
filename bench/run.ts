/**
 * `npm run bench [-- --duration 10 --connections 50 --warmup 3 --scenarios a,b …]`
 * (`--help` lists the flags; the method is in bench/README.md).
 *
 * In order: the baseline (bare Hono, bench/baseline.ts); the Node scenarios
 * against the server as `npm start` runs it on a temp file database
 * (bench/node.ts, bench/scenarios.ts); the `worker:` rows, each driven in
 * turns with its floors (bench/worker.ts); the `sqld:` rows; the baseline
 * again. Then the tables (bench/report.ts), the engine rows
 * (bench/engine.ts), the database bill (bench/rows.ts) and the targets
 * (bench/targets.ts). Writes the rows as JSON under bench/results/. Exits 1
 * when the server's peak RSS is at or over its bound.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT } from "../scripts/sqld";
import { createDriver, type Result } from "./drive";
import { measureEngine } from "./engine";
import { startNodeServers, sqldRows } from "./node";
import { type BenchOptions, parseOptions, selected, USAGE } from "./options";
import { baselineOf, formatEngine, formatRun, withRatios } from "./report";
import { measureRowsBill } from "./rows";
import { formatRowsBill } from "./rows-report";
import { mixReads, rootGet, scenarios, WORKER_SCENARIOS } from "./scenarios";
import { formatTargets, rssCheckFailure } from "./targets";
import { workerRows } from "./worker";

/** The whole run: servers, rows, tables, the JSON file. */
async function bench(options: BenchOptions): Promise<void> {
  const driver = createDriver(options);
  const dir = mkdtempSync(join(tmpdir(), "petstore-bench-"));
  try {
    const servers = await startNodeServers(dir, options);
    const { fixture, api } = servers;
    let measured: { before: Result; after: Result; results: Result[]; rss: number };
    try {
      const all = scenarios(fixture);
      const wanted = options.scenarios.length > 0 ? options.scenarios : Object.keys(all);
      // Warm-up (unmeasured): JIT, module loading and caches of the baseline.
      console.error("warming up …");
      await driver.warm(servers.baseline.port, rootGet);
      // The baseline runs before and after the scenarios; ratios use the mean, so drift of the machine during the run shows.
      console.error(`baseline (${servers.petBytes}-byte JSON) …`);
      const driveBaseline = (when: string) =>
        driver.drive(`baseline: bare Hono, constant JSON (${when})`, servers.baseline.port, rootGet, servers.baseline.cpu);
      const before = await driveBaseline("before");
      const results: Result[] = [];
      for (const name of Object.keys(all).filter((n) => selected(n, wanted))) {
        // Each read scenario and the mix's reads are warmed right before they run: the read cache keeps an
        // answer for 30 s, so a warm-up of every read at the start would have expired before the later ones.
        if (name.startsWith("GET")) await driver.warm(api.port, all[name]!);
        if (name.startsWith("mixed")) await driver.warm(api.port, mixReads(fixture));
        console.error(`${name} …`);
        results.push(await driver.drive(name, api.port, all[name]!, api.cpu));
      }
      const rss = api.peakRssMb();
      const workerNames = WORKER_SCENARIOS.map((n) => `worker: ${n}`).filter((n) => selected(n, wanted));
      if (workerNames.length > 0) results.push(...(await workerRows(dir, workerNames, servers.petBytes, options, driver)));
      if (options.sqld) results.push(...(await sqldRows(dir, wanted, options, driver)));
      const after = await driveBaseline("after");
      measured = { before, after, results, rss };
    } finally {
      await servers.stop();
    }
    const baseline = baselineOf(measured.before, measured.after);
    const results = withRatios(measured.results, baseline);
    const { connections, duration } = options;
    const pets = fixture.petIds.length;
    console.log(formatRun({ connections, duration, pets, node: process.version, baseline, results, peakRssMb: measured.rss }));
    if (options.engine) {
      console.error("engine: the statements of an order, 50 per transaction …");
      console.log(formatEngine(await measureEngine()));
    }
    console.error("database bill: sqld with the generated dataset …");
    console.log(`\n${formatRowsBill(await measureRowsBill())}`);
    console.log(`\n${formatTargets(results, measured.rss, baseline.cpuUsPerRequest)}`);
    mkdirSync(join(ROOT, "bench/results"), { recursive: true });
    const file = join(ROOT, "bench/results", `${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
    const json = { connections, duration, pets, baseline: [measured.before, measured.after], results, peakRssMb: measured.rss };
    writeFileSync(file, JSON.stringify(json, null, 2));
    console.log(`results: ${file}`);
    const rssFailure = rssCheckFailure(measured.rss);
    if (rssFailure) {
      console.log(rssFailure);
      process.exitCode = 1;
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  let options: BenchOptions;
  try {
    options = parseOptions(process.argv.slice(2));
  } catch (error) {
    console.error(`${error instanceof Error ? error.message : error}\n\n${USAGE}`);
    process.exit(2);
  }
  if (options.help) console.log(USAGE);
  else if (options.rows) console.log(formatRowsBill(await measureRowsBill()));
  else await bench(options);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
