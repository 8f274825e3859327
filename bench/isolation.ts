/**
 * `npm run bench:isolation [-- --runtime node|worker|both] [--kinds slow,hang] [--writes 300] [--latency MS]
 * [--deadline S] [--rounds 1] [--before DIR]`
 *
 * Isolation between subscribers: three fast subscriptions beside a fourth that is slow, never answers, fails, is deleted or is
 * changed mid-round, under a burst of POST /pets from 8 clients; the fast ones' lag (arrival − the write's response) per kind, on
 * Node (one server process) and on the Worker (workerd), each on sqld; and the deliveries per second to one `ordering: "none"`
 * subscription whose receiver answers in 100 ms; (kind `hang4`) four that never answer, made before the fast ones; and (Node, kind
 * `killed`) two server processes, or two Workers (each its own workerd, writes divided), on one sqld, one SIGKILLed mid-burst.
 * With `--before DIR`, an older checkout runs before each run of this one.
 * README: bench/README.md#isolation.
 */
import { type ChildProcess, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { createClient } from "@libsql/client";
import { ROOT, type SqldServer, startSqld } from "../scripts/sqld";
import { RATE_LIMIT_BINDING_NAMES } from "../src/runtime/workers/rate-limiter";
import { type Behaviour, burst, call, type HookReceiver, percentile, startHookReceiver } from "./isolation-receiver";
import { UNLIMITED } from "./scenarios";
import { seed, startServer, stopGracefully } from "./webhooks-harness";

const KINDS = ["alone", "slow", "hang", "hangnone", "hang4", "failing", "deleted", "changed", "none", "killed"] as const;
type Kind = (typeof KINDS)[number];
type Runtime = "node" | "worker";

const { values } = parseArgs({
  options: {
    runtime: { type: "string", default: "both" },
    kinds: { type: "string", default: KINDS.join(",") },
    writes: { type: "string", default: "300" },
    clients: { type: "string", default: "8" },
    latency: { type: "string", default: "0" },
    deadline: { type: "string", default: "30" },
    rounds: { type: "string", default: "1" },
    before: { type: "string" },
  },
});

/** A management request made `atMs` after the burst starts, to the fourth subscription. */
interface Action {
  atMs: number;
  method: string;
  path: (id: number) => string;
  body?: unknown;
}

/** What a kind runs: the fourth subscriber's endpoint and settings, and what happens to it mid-round. */
interface Plan {
  label: string;
  fourth?: { behaviour: Behaviour; settings?: Record<string, unknown>; actions?: Action[] };
  /** Only the fourth, unordered (kind `none`): its rate is the result. */
  alone?: boolean;
  /** A second server process (Node: polling every 100 ms) or Worker (taking half the writes) on the database, SIGKILLed this long into the burst. */
  killAtMs?: number;
  /** Subscribers whose receivers never answer, made before the fast ones (their ids first: they fill a run's send slots). */
  hangingFirst?: number;
}

const patch = (atMs: number, body: unknown): Action => ({ atMs, method: "PATCH", path: (id) => `/webhooks/${id}`, body });

const PLANS: Record<Kind, Plan> = {
  alone: { label: "3 fast" },
  slow: { label: "3 fast + 1 answering in 9 s", fourth: { behaviour: { delayMs: 9000, status: 204 } } },
  hang: { label: "3 fast + 1 never answering (10 s timeout)", fourth: { behaviour: { delayMs: 0, status: 204, hang: true } } },
  hangnone: {
    label: '3 fast + 1 `ordering: "none"`, `maxInFlight` 50, never answering',
    fourth: { behaviour: { delayMs: 0, status: 204, hang: true }, settings: { ordering: "none", maxInFlight: 50 } },
  },
  hang4: { label: "4 never answering, made first, + 3 fast", hangingFirst: 4 },
  failing: { label: "3 fast + 1 answering 503", fourth: { behaviour: { delayMs: 0, status: 503 } } },
  deleted: {
    label: "3 fast + 1 answering in 9 s, deleted at 2 s",
    fourth: { behaviour: { delayMs: 9000, status: 204 }, actions: [{ atMs: 2000, method: "DELETE", path: (id) => `/webhooks/${id}` }] },
  },
  changed: {
    label: "3 fast + 1 answering in 2 s: paused, resumed, re-typed, rotated",
    fourth: {
      behaviour: { delayMs: 2000, status: 204 },
      actions: [
        patch(500, { enabled: false }),
        patch(1000, { enabled: true }),
        patch(1500, { events: ["pet.created", "category.created"] }),
        { atMs: 2000, method: "POST", path: (id) => `/webhooks/${id}/secret/rotate`, body: {} },
      ],
    },
  },
  killed: {
    label: "3 fast + 1 answering in 9 s; of 2 processes, one SIGKILLed at 1 s",
    fourth: { behaviour: { delayMs: 9000, status: 204 } },
    killAtMs: 1000,
  },
  none: {
    label: '1 `ordering: "none"`, answering in 100 ms',
    alone: true,
    fourth: { behaviour: { delayMs: 100, status: 204 }, settings: { ordering: "none", maxInFlight: 10 } },
  },
};

interface Result {
  runtime: Runtime;
  code: "before" | "after";
  kind: Kind;
  expected: number;
  arrived: number;
  lags: number[];
  duplicates: number;
  fourthArrivals: number;
  /** Deliveries per second to the fourth (kind `none`). */
  rate: number;
  failedLines: number;
  problems: string[];
}

const number = (name: keyof typeof values) => Number(values[name]);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The service under test: its base URLs (the live instances'), a count of its `dispatch failed` lines, how to stop it, and (kind `killed`) to SIGKILL its second instance. */
interface Service {
  bases(): string[];
  failedLines(): number;
  stop(): Promise<void>;
  kill?: () => void;
}

/** One Node server process of `checkout` on `databaseUrl`; `second`: and another on it that polls every 100 ms. */
async function nodeService(checkout: string, databaseUrl: string, second = false): Promise<Service> {
  const children: ChildProcess[] = [];
  const env = { DATABASE_URL: databaseUrl, ...(second ? { WEBHOOK_POLL_MS: "100" } : {}) };
  const servers = [await startServer(checkout, env, children)];
  if (second) servers.push(await startServer(checkout, env, children));
  let failed = 0;
  const count = (chunk: Buffer) => (failed += chunk.toString("utf8").split("dispatch failed").length - 1);
  for (const { child } of servers) child.stdout!.on("data", count);
  for (const { child } of servers) child.stderr!.on("data", count);
  const live = () => servers.filter(({ child }) => child.exitCode === null && child.signalCode === null);
  return {
    bases: () => [servers[0]!.base],
    failedLines: () => failed,
    stop: async () => void (await Promise.all(live().map(({ child }) => stopGracefully(child)))),
    kill: second ? () => servers[1]!.child.kill("SIGKILL") : undefined,
  };
}

/** The workerd processes this process started, by pid. */
const workerdPids = (): number[] =>
  execFileSync("ps", ["-o", "pid=,comm=", "--ppid", String(process.pid)], { encoding: "utf8" })
    .split("\n")
    .filter((line) => line.includes("workerd"))
    .map((line) => Number.parseInt(line, 10));

/** `checkout`'s Worker under workerd (its scripts/local-worker.ts) on `databaseUrl`, `second`: and another (its own workerd); their log lines pass through. */
async function workerService(checkout: string, databaseUrl: string, second = false): Promise<Service> {
  const { startLocalWorker } = (await import(join(checkout, "scripts/local-worker.ts"))) as typeof import("../scripts/local-worker");
  const { buildAssets } = (await import(join(checkout, "scripts/build-assets.ts"))) as typeof import("../scripts/build-assets");
  buildAssets(); // public/ for the checkout's [assets] binding
  const rateLimits = Object.fromEntries(Object.values(RATE_LIMIT_BINDING_NAMES).map((name) => [name, 100_000_000]));
  const vars = { ...UNLIMITED, WEBHOOKS_ALLOW_PRIVATE: "true", LOG_LEVEL: "error" };
  let failed = 0;
  const writes = [process.stdout, process.stderr].map((stream) => {
    const write = stream.write.bind(stream);
    stream.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
      failed += String(chunk).split("dispatch failed").length - 1;
      return write(chunk, ...rest);
    }) as typeof stream.write;
    return () => {
      stream.write = write;
    };
  });
  const workers = [await startLocalWorker({ databaseUrl, vars, rateLimits, logLevel: "warn" })];
  const first = workerdPids();
  if (second) workers.push(await startLocalWorker({ databaseUrl, vars, rateLimits, logLevel: "warn" }));
  const secondPids = workerdPids().filter((pid) => !first.includes(pid));
  let killed = false;
  return {
    bases: () => workers.slice(0, killed ? 1 : 2).map((w) => w.url),
    failedLines: () => failed,
    stop: async () => {
      await Promise.all(workers.map((w, i) => (i === 1 && killed ? undefined : w.stop())));
      for (const restore of writes) restore();
    },
    kill: second
      ? () => {
          killed = true;
          for (const pid of secondPids) process.kill(pid, "SIGKILL");
        }
      : undefined,
  };
}

/** The dispatch state and the newest event, for a run whose watched deliveries did not all arrive. */
async function dispatchState(url: string): Promise<string> {
  const raw = createClient({ url });
  try {
    const [state] = (await raw.execute("SELECT *, (SELECT max(id) FROM events) AS newest FROM webhook_dispatch")).rows;
    const log = (await raw.execute("SELECT webhook_id, status, count(*) AS n, sum(attempts) AS attempts FROM webhook_deliveries GROUP BY 1, 2")).rows;
    return `not all arrived; dispatch state ${JSON.stringify(state)}; log ${JSON.stringify(log)}`;
  } finally {
    raw.close();
  }
}

/** One run: sqld, the service, the subscriptions, the burst and the mid-round actions, then the wait for the watched deliveries. */
async function measure(runtime: Runtime, code: Result["code"], checkout: string, kind: Kind): Promise<Result> {
  const plan = PLANS[kind];
  const writes = number("writes");
  const dir = mkdtempSync(join(tmpdir(), "petstore-isolation-"));
  let sqld: SqldServer | undefined;
  let receiver: HookReceiver | undefined;
  let service: Service | undefined;
  const problems: string[] = [];
  try {
    sqld = await startSqld({ dataDir: join(dir, "sqld") });
    const { migrateServer } = (await import(join(checkout, "scripts/sqld.ts"))) as typeof import("../scripts/sqld");
    await migrateServer(sqld.url);
    const raw = createClient({ url: sqld.url });
    const key = (await seed(raw, { subscriptions: 0, events: 0, receiverUrl: "", staff: true })).staffKey!;
    raw.close();
    const fast = plan.alone ? [] : ["fast-1", "fast-2", "fast-3"];
    const latency: Behaviour = { delayMs: number("latency"), status: 204 };
    const hanging = Array.from({ length: plan.hangingFirst ?? 0 }, (_, i): [string, Behaviour] => [`hang-${i + 1}`, { delayMs: 0, status: 204, hang: true }]);
    const behaviours = new Map<string, Behaviour>([...hanging, ...fast.map((name): [string, Behaviour] => [name, latency])]);
    if (plan.fourth) behaviours.set("fourth", plan.fourth.behaviour);
    receiver = await startHookReceiver(behaviours);
    const second = plan.killAtMs !== undefined;
    service = runtime === "node" ? await nodeService(checkout, sqld.url, second) : await workerService(checkout, sqld.url, second);
    const base = service.bases()[0]!;
    const ids = new Map<string, number>();
    for (const name of behaviours.keys()) {
      const settings = name === "fourth" ? plan.fourth?.settings : undefined;
      const made = await call(base, key, "POST", "/webhooks", { url: `${receiver.url}/hook/${name}`, events: ["pet.created"], ...settings });
      if (made.status !== 201) throw new Error(`POST /webhooks answered ${made.status}: ${JSON.stringify(made.body)}`);
      ids.set(name, (made.body as { id: number }).id);
    }
    const actions = (plan.fourth?.actions ?? []).map(async (action) => {
      await sleep(action.atMs);
      const res = await call(base, key, action.method, action.path(ids.get("fourth")!), action.body);
      if (res.status >= 300) problems.push(`${action.method} ${action.path(ids.get("fourth")!)} answered ${res.status}`);
    });
    const killing = plan.killAtMs === undefined ? undefined : sleep(plan.killAtMs).then(() => service!.kill!());
    const answered = await burst(service.bases, key, writes, number("clients"));
    await killing;
    await Promise.all(actions);
    const watched = plan.alone ? ["fourth"] : fast;
    // The answered pets that arrived (a write retried after its instance was killed may have made one more pet too).
    const distinct = (name: string) => new Set((receiver!.arrivals.get(name) ?? []).map((a) => a.petId).filter((id) => answered.has(id))).size;
    const deadline = performance.now() + number("deadline") * 1000;
    while (performance.now() < deadline && !watched.every((name) => distinct(name) >= writes)) await sleep(50);
    await sleep(1500); // late duplicates
    if (!watched.every((name) => distinct(name) >= writes)) {
      problems.push(await dispatchState(sqld.url));
      for (const name of watched) {
        const got = new Set((receiver.arrivals.get(name) ?? []).map((a) => a.petId));
        const missing = [...answered.keys()].filter((id) => !got.has(id));
        problems.push(`${name} (${ids.get(name)}) is missing ${missing.length} pets: ${missing.slice(0, 10).join(", ")}${missing.length > 10 ? ", …" : ""}`);
      }
    }
    const lags: number[] = [];
    let duplicates = 0;
    for (const name of watched) {
      const seen = new Set<number>();
      for (const { petId, at } of receiver.arrivals.get(name) ?? []) {
        if (seen.has(petId)) duplicates += 1;
        else if (answered.has(petId)) lags.push(at - answered.get(petId)!);
        seen.add(petId);
      }
    }
    const fourth = receiver.arrivals.get("fourth") ?? [];
    const span = fourth.length > 1 ? (fourth.at(-1)!.at - fourth[0]!.at) / 1000 : 0;
    const arrived = watched.reduce((sum, name) => sum + distinct(name), 0);
    return {
      runtime,
      code,
      kind,
      expected: watched.length * writes,
      arrived,
      lags,
      duplicates,
      fourthArrivals: fourth.length,
      rate: span > 0 ? (fourth.length - 1) / span : 0,
      failedLines: service.failedLines(),
      problems,
    };
  } finally {
    await service?.stop().catch(() => undefined);
    await receiver?.close();
    await sqld?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const n = (x: number, digits = 0) => (Number.isFinite(x) ? x.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits }) : "–");
const s = (ms: number) => `${n(ms / 1000, 2)} s`;

/** The table row of a run. */
function row(r: Result): string {
  const lag = `${s(percentile(r.lags, 50))} / ${s(percentile(r.lags, 95))} / ${s(percentile(r.lags, 99))}`;
  const other = r.kind === "none" ? `${n(r.rate)}/s` : !PLANS[r.kind].fourth ? "–" : `${n(r.fourthArrivals)} arrivals`;
  return `| ${r.runtime} | ${r.code} | ${PLANS[r.kind].label} | ${n(r.arrived)}/${n(r.expected)} | ${lag} | ${other} | ${r.duplicates} | ${r.failedLines} |`;
}

async function main(): Promise<void> {
  const runtimes: Runtime[] = values.runtime === "both" ? ["node", "worker"] : [values.runtime as Runtime];
  const kinds = values.kinds!.split(",") as Kind[];
  for (const kind of kinds) if (!KINDS.includes(kind)) throw new Error(`--kinds: ${kind} is not one of ${KINDS.join(", ")}`);
  const results: Result[] = [];
  for (let round = 1; round <= number("rounds"); round++) {
    for (const runtime of runtimes) {
      for (const kind of kinds) {
        const codes: [Result["code"], string][] = values.before && kind !== "none" ? [["before", resolve(values.before)]] : [];
        codes.push(["after", ROOT]);
        for (const [code, checkout] of codes) {
          console.error(`round ${round}: ${runtime} ${code} ${kind} …`);
          const r = await measure(runtime, code, checkout, kind);
          results.push(r);
          console.error(row(r));
          for (const p of r.problems) console.error(`  ${p}`);
        }
      }
    }
  }
  console.log(
    `${number("writes")} POST /pets from ${number("clients")} clients; fast receivers answer in ${number("latency")} ms; lag = arrival − the write's response`,
  );
  console.log(
    "| runtime | code | subscribers | fast deliveries (in the deadline) | fast lag p50 / p95 / p99 | the fourth | duplicates | `dispatch failed` lines |",
  );
  console.log("| --- | --- | --- | --- | --- | --- | --- | --- |");
  for (const r of results) console.log(row(r));
  for (const r of results.filter((x) => x.problems.length > 0))
    console.log(`\n${r.runtime} ${r.code} ${r.kind}:\n${r.problems.map((p) => `- ${p}`).join("\n")}`);
}

main().catch((error) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : error);
  process.exit(1);
});
