/**
 * The `worker:` rows of `npm run bench`: src/worker.ts under workerd
 * (wrangler's local engine, scripts/local-worker.ts) over sqld with one
 * connection (scripts/sqld.ts), seeded like the Node database, rate limits
 * raised. Each row is driven in turns with its floors (bench/floors/): bare
 * Hono Workers on the same sqld doing the same database work, plain, with
 * the Worker's Rate Limiting binding call, and deployed like the Worker.
 * Bare Hono answering a constant under workerd is measured last.
 */
import { join } from "node:path";
import { RATE_LIMIT_BINDING_NAMES } from "../src/runtime/workers/rate-limiter";
import { buildAssets } from "../scripts/build-assets";
import { startLocalWorker } from "../scripts/local-worker";
import { freePort, ONE_CONNECTION, startSqld } from "../scripts/sqld";
import { descendantsNamed } from "./cpu";
import type { Driver, Result, Turn } from "./drive";
import { type Floor, startFloorWorker } from "./floors/start";
import type { BenchOptions } from "./options";
import { rootGet, scenarios, seedFixture, UNLIMITED } from "./scenarios";
import { startWorkerProfile } from "./worker-profile";

/** The floor Worker (bench/floors/) each `worker:` row is compared with: the same requests, one query or one write batch, no app. */
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
 * (bench/floors/start.ts), the floor its row is compared with.
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
async function driveConstantFloor(petBytes: number, driver: Driver): Promise<Result> {
  console.error("worker floor: constant …");
  const constant = await startFloorWorker("constant", { BODY_BYTES: String(petBytes) });
  try {
    const port = Number(new URL(constant.url).port);
    await driver.warm(port, rootGet);
    return await driver.drive("worker floor: bare Hono, constant JSON", port, rootGet, workerdCpu);
  } finally {
    await constant.stop();
  }
}

/**
 * The `worker:` rows named `names`: sqld on a folder of `dir` (migrated,
 * seeded like the Node database), the Worker under workerd pointed at it;
 * then, for each row, its floors started beside it on the same sqld, each
 * warmed, and the Worker and its floors driven in turns; last the constant
 * floor. With `--cpu-prof`, a Worker profile per row. Stops all.
 */
export async function workerRows(dir: string, names: readonly string[], petBytes: number, options: BenchOptions, driver: Driver): Promise<Result[]> {
  console.error("worker: sqld + workerd …");
  const sqld = await startSqld({ dataDir: join(dir, "sqld-worker"), ...ONE_CONNECTION });
  try {
    buildAssets(); // public/ for the Worker's [assets] binding
    const fixture = await seedFixture(sqld.url, options.pets);
    const rateLimits = Object.fromEntries(Object.values(RATE_LIMIT_BINDING_NAMES).map((name) => [name, 100_000_000]));
    const profileDir = options.cpuProf;
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
          for (const turn of turns) await driver.warm(turn.port, setup);
          const profile = inspectorPort ? await startWorkerProfile(inspectorPort) : undefined;
          const [row, ...floorRows] = await driver.driveInTurns(turns, setup);
          if (profile && profileDir) console.error(`CPU profile: ${await profile.stop(profileDir, name)}`);
          results.push({ ...row!, floor: floors.floor, plainFloor: floors.plainFloor }, ...floorRows);
        } finally {
          await floors.stop();
        }
      }
    } finally {
      await worker.stop();
    }
    return [...results, await driveConstantFloor(petBytes, driver)];
  } finally {
    await sqld.stop();
  }
}
