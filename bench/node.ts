/**
 * The Node servers of `npm run bench`: the server as `npm start` runs it (the
 * esbuild bundle dist/node/server.mjs, its node flags and environment
 * assignments, rate limits raised) on a temp file database, beside the
 * baseline (bench/baseline.ts, bare Hono); and the same server on a sqld for
 * the "sqld: …" rows.
 */
import { execFileSync, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { freePort, ROOT, startSqld } from "../scripts/sqld";
import { descendantsNamed } from "./cpu";
import type { DriveOptions, Driver, Result } from "./drive";
import { type BenchOptions, selected } from "./options";
import { npmStartCommand, peakRssMb, startScript, stopChild, waitFor } from "./processes";
import { type Fixture, scenarios, seedFixture, SQLD_SCENARIOS, UNLIMITED } from "./scenarios";

/** The server under test and the baseline, both listening. */
interface NodeServers {
  fixture: Fixture;
  /** Bytes of one pet's JSON: the baseline and the constant floor answer that many. */
  petBytes: number;
  api: { port: number; cpu: DriveOptions; peakRssMb(): number };
  baseline: { port: number; cpu: DriveOptions };
  /** Stop both; resolves once the server has closed its database. */
  stop(): Promise<void>;
}

/** Bundle the server (`npm run build:server`) and the baseline: both run as plain JavaScript, like `npm start`. */
function build(): void {
  execFileSync("npm", ["run", "--silent", "build:server"], { cwd: ROOT, stdio: "inherit" });
  const baseline = ["bench/baseline.ts", "--bundle", "--platform=node", "--format=esm", "--packages=external", "--log-level=warning"];
  execFileSync("node_modules/.bin/esbuild", [...baseline, "--outfile=dist/node/bench-baseline.mjs"], { cwd: ROOT, stdio: "inherit" });
}

/**
 * Seed `dir`/bench.db, build, and start the server (with `--cpu-prof` when
 * asked) and the baseline answering a pet-sized constant.
 */
export async function startNodeServers(dir: string, options: BenchOptions): Promise<NodeServers> {
  const url = `file:${join(dir, "bench.db")}`;
  console.error(`seeding ${url} …`);
  const fixture = await seedFixture(url, options.pets);
  const [apiPort, basePort] = [await freePort(), await freePort()];
  build();
  const profile = options.cpuProf ? ["--cpu-prof", "--cpu-prof-dir", options.cpuProf] : [];
  const { env, nodeFlags } = npmStartCommand();
  const apiEnv = { ...env, DATABASE_URL: url, PORT: String(apiPort), HOST: "127.0.0.1", ...UNLIMITED };
  const api = startScript("dist/node/server.mjs", apiEnv, [...nodeFlags, ...profile]);
  let baseline: ChildProcess | undefined;
  const stop = async () => {
    // The server closes its database on SIGTERM: the caller removes the files only once it has exited.
    await Promise.all([stopChild(api), baseline && stopChild(baseline)]);
  };
  try {
    await waitFor(`http://127.0.0.1:${apiPort}/health`, api);
    const petBytes = (await (await fetch(`http://127.0.0.1:${apiPort}/pets/${fixture.petIds[0]}`)).text()).length;
    baseline = startScript("dist/node/bench-baseline.mjs", { PORT: String(basePort), BODY_BYTES: String(petBytes) });
    await waitFor(`http://127.0.0.1:${basePort}/`, baseline);
    const basePid = baseline.pid!;
    return {
      fixture,
      petBytes,
      // With WEB_CONCURRENCY > 1 the server is a primary and its worker processes: their CPU counts too
      // (Node 24 names its main thread, and so a process's comm, "MainThread").
      api: {
        port: apiPort,
        cpu: { cpuPids: () => [api.pid!, ...descendantsNamed("node", api.pid!), ...descendantsNamed("MainThread", api.pid!)] },
        peakRssMb: () => peakRssMb(api.pid!),
      },
      baseline: { port: basePort, cpu: { cpuPids: () => [basePid] } },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * The server on a sqld (loopback HTTP) seeded like the file database; runs
 * the `wanted` scenarios of SQLD_SCENARIOS (reads warmed up first) and
 * returns their rows, named "sqld: …".
 */
export async function sqldRows(dir: string, wanted: readonly string[], options: BenchOptions, driver: Driver): Promise<Result[]> {
  const sqld = await startSqld({ dataDir: join(dir, "sqld-server") });
  const port = await freePort();
  let server: ChildProcess | undefined;
  try {
    console.error(`seeding ${sqld.url} …`);
    const fixture = await seedFixture(sqld.url, options.pets);
    server = startScript("dist/node/server.mjs", { DATABASE_URL: sqld.url, PORT: String(port), HOST: "127.0.0.1", ...UNLIMITED });
    await waitFor(`http://127.0.0.1:${port}/health`, server);
    const all = scenarios(fixture);
    const names = SQLD_SCENARIOS.filter((n) => selected(n, wanted));
    for (const name of names.filter((n) => n.startsWith("GET"))) await driver.warm(port, all[name]!);
    const rows: Result[] = [];
    const pid = server.pid!;
    for (const name of names) {
      console.error(`sqld: ${name} …`);
      rows.push(await driver.drive(`sqld: ${name}`, port, all[name]!, { cpuPids: () => [pid] }));
    }
    return rows;
  } finally {
    // The server first: stopping sqld under it would fail its last requests.
    if (server) await stopChild(server);
    await sqld.stop();
  }
}
