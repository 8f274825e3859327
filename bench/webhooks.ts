/**
 * `npm run bench:webhooks [-- --subscriptions 50 --events 3000 --processes 2 --timeout 120 --rounds 2 --latency 0 --concurrency N --before /tmp/old]`
 *
 * Deliveries per second and the database rows read and written per delivery while a backlog of `--subscriptions` × `--events`
 * drains through `--processes` server processes sharing one sqld, and `/health` latency meanwhile; for this checkout ("after")
 * and, with `--before DIR`, an older checkout ("before"), interleaved: before, after, before, after… (`--rounds` pairs). Every run
 * checks the cluster guarantee: each subscription receives each event exactly once, in ascending order, correctly signed. In
 * "after" runs, subscriptions are paused and resumed, re-typed and their secrets rotated while the backlog drains
 * (docs/webhooks.md#managing-a-subscription), and a few categories are created through the servers. How one run goes: `measure`.
 * Exits 1 after the table when any run timed out or broke the guarantee. README: bench/README.md#webhooks.
 */
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { type Client, createClient } from "@libsql/client";
import { ROOT, startSqld, type SqldServer } from "../scripts/sqld";
import {
  type HealthSample,
  type Receiver,
  type RowProxy,
  type Rows,
  sampleHealth,
  seed,
  startReceiver,
  startRowProxy,
  startServer,
  stopGracefully,
} from "./webhooks-harness";

const HELP = `npm run bench:webhooks -- [flags]
  --subscriptions N  subscriptions to all event types (default 50)
  --events N         category.created events in the backlog (default 3000)
  --processes N      server processes sharing the database (default 2)
  --timeout S        seconds a drain may take before the run fails (default 120)
  --rounds N         rounds; each runs "before" (with --before) then "after" (default 2)
  --latency MS       the receiver answers each delivery after MS (default 0)
  --concurrency N    WEBHOOK_CONCURRENCY of each server process (default: its own default)
  --before DIR       a checkout of the older code to compare with (git worktree, node_modules linked)`;

const { values } = parseArgs({
  options: {
    subscriptions: { type: "string", default: "50" },
    events: { type: "string", default: "3000" },
    processes: { type: "string", default: "2" },
    timeout: { type: "string", default: "120" },
    rounds: { type: "string", default: "2" },
    latency: { type: "string", default: "0" },
    concurrency: { type: "string" },
    before: { type: "string" },
    help: { type: "boolean", default: false },
  },
});

/** A flag as a positive integer. @throws Error naming the flag otherwise. */
function count(name: keyof typeof values): number {
  const n = Number(values[name]);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, not ${String(values[name])}`);
  return n;
}

/** The sizes of a run. */
interface Options {
  subscriptions: number;
  events: number;
  processes: number;
  timeoutS: number;
}

/** A change made through the API during an "after" drain. */
type Op = { kind: "pause" | "resume" | "retype" | "rotate"; webhookId: number } | { kind: "post"; webhookId?: undefined };

/** Time between management requests, ms. */
const OP_INTERVAL_MS = 200;
/** Categories created through the servers during an "after" drain. */
const POSTS = 5;

/**
 * The management requests of an "after" run, in order: a fifth of the subscriptions paused (each resumed two steps later, all
 * before the end), a fifth re-typed to category.created + pet.created (they still want every backlog event), a fifth rotated,
 * and `POSTS` categories created in between.
 */
function managementPlan(subscriptions: number): Op[] {
  const ids = Array.from({ length: subscriptions }, (_, i) => i + 1);
  const paused = ids.filter((id) => id % 5 === 1);
  const retyped = ids.filter((id) => id % 5 === 2);
  const rotated = ids.filter((id) => id % 5 === 3);
  const ops: Op[] = [];
  const resumed = new Set<number>();
  let posts = 0;
  for (let j = 0; j < Math.max(paused.length, retyped.length, rotated.length, POSTS * 2); j++) {
    if (paused[j]) ops.push({ kind: "pause", webhookId: paused[j]! });
    if (retyped[j]) ops.push({ kind: "retype", webhookId: retyped[j]! });
    if (rotated[j]) ops.push({ kind: "rotate", webhookId: rotated[j]! });
    const resume = paused[j - 2];
    if (resume) {
      ops.push({ kind: "resume", webhookId: resume });
      resumed.add(resume);
    }
    if (j % 2 === 0 && posts < POSTS) {
      ops.push({ kind: "post" });
      posts += 1;
    }
  }
  for (const id of paused) if (!resumed.has(id)) ops.push({ kind: "resume", webhookId: id });
  return ops;
}

/** One management request as made: when (ms into the drain), what, and the answer's status. */
interface Done {
  at: number;
  op: Op;
  status: number | string;
}

/**
 * Make the requests of `managementPlan` one every `OP_INTERVAL_MS`, in turn through each server, with the staff key; a rotation's
 * new secret joins its subscription's secrets at the receiver. Stops early when `stopped()` says so.
 */
async function manage(ctx: { bases: string[]; staffKey: string; receiver: Receiver; started: number; label: string; stopped: () => boolean }): Promise<Done[]> {
  const done: Done[] = [];
  const headers = { Authorization: `Bearer ${ctx.staffKey}`, "Content-Type": "application/json" };
  const plan = managementPlan(ctx.receiver.secrets.size);
  for (const [k, op] of plan.entries()) {
    await new Promise((r) => setTimeout(r, OP_INTERVAL_MS));
    if (ctx.stopped()) break;
    const base = ctx.bases[k % ctx.bases.length]!;
    const hook = `${base}/webhooks/${op.webhookId}`;
    const [url, method, body, want] =
      op.kind === "post"
        ? [`${base}/categories`, "POST", { name: `Bench ${ctx.label} ${k}` }, 201]
        : op.kind === "rotate"
          ? [`${hook}/secret/rotate`, "POST", {}, 200]
          : [hook, "PATCH", op.kind === "retype" ? { events: ["category.created", "pet.created"] } : { enabled: op.kind === "resume" }, 200];
    const at = performance.now() - ctx.started;
    try {
      const res = await fetch(url, { method, headers, body: JSON.stringify(body) });
      const answer = (await res.json()) as { secret?: string };
      if (op.kind === "rotate" && res.status === 200 && answer.secret) ctx.receiver.secrets.get(op.webhookId)!.push(answer.secret);
      done.push({ at, op, status: res.status === want ? res.status : `${res.status} ${JSON.stringify(answer)}` });
    } catch (error) {
      done.push({ at, op, status: `failed: ${error instanceof Error ? error.message : String(error)}` });
    }
  }
  return done;
}

/** What one run measured and found. */
interface Result {
  kind: "before" | "after";
  round: number;
  processes: number;
  /** Deliveries the subscriptions should get: subscriptions × events at the end. */
  expected: number;
  /** Deliveries in the timed window (duplicates included), its length in s, and the rows sqld reported for it. */
  measured: number;
  seconds: number;
  rows: Rows;
  health: HealthSample;
  /** Findings against the guarantee by kind ("duplicates", "out of order", …), and what went wrong, a line each. */
  findings: Record<string, number>;
  problems: string[];
}

/** Ascending ids as ranges, e.g. `105–1200, 2903`. */
function ranges(ids: number[]): string {
  const out: string[] = [];
  for (let i = 0, j = 0; i < ids.length; i = ++j) {
    while (j + 1 < ids.length && ids[j + 1] === ids[j]! + 1) j++;
    out.push(i === j ? `${ids[i]}` : `${ids[i]}–${ids[j]}`);
  }
  return out.length > 6 ? `${out.slice(0, 6).join(", ")}, … (${out.length} ranges)` : out.join(", ");
}

/** A time in the drain (ms since it started), for messages. */
const sec = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

/**
 * Check every subscription's arrivals against `eventIds` (ascending): duplicates (an id received again), out of order (a first
 * arrival below an id received before it), missing ids, rejected signatures; each finding with the management requests near it.
 */
function verify(receiver: Receiver, eventIds: number[], ops: Done[], started: number): Pick<Result, "findings" | "problems"> {
  const findings = { duplicates: 0, "out of order": 0, missing: 0, "bad signatures": receiver.rejected.length };
  const problems: string[] = [];
  const opsOn = (id: number, at?: number) =>
    ops
      .filter((d) => (d.op.webhookId === id || d.op.kind === "post") && (at === undefined || Math.abs(d.at - at) < 3000))
      .map((d) => `${d.op.kind}${d.op.webhookId ? "" : " category"} at ${sec(d.at)}`)
      .join(", ") || "no management request";
  for (const id of receiver.secrets.keys()) {
    const arrivals = receiver.arrivals.get(id) ?? [];
    const seen = new Set<number>();
    let highest = 0;
    for (const [i, { eventId, at }] of arrivals.entries()) {
      const t = at - started;
      const kind = seen.has(eventId) ? "duplicates" : eventId < highest ? "out of order" : undefined;
      if (kind) findings[kind] += 1;
      if (kind && problems.length < 20)
        problems.push(`subscription ${id}: event ${eventId} (arrival #${i + 1}, ${sec(t)}) after ${highest}; ${opsOn(id, t)} within 3 s`);
      seen.add(eventId);
      highest = Math.max(highest, eventId);
    }
    const missing = eventIds.filter((e) => !seen.has(e));
    findings.missing += missing.length;
    if (missing.length === 0) continue;
    const last = arrivals.filter((a) => a.eventId < missing[0]!).at(-1);
    const next = arrivals.find((a) => a.eventId > missing[0]!);
    const seenAt = (a?: { eventId: number; at: number }) => (a ? `${a.eventId} at ${sec(a.at - started)}` : "none");
    problems.push(
      `subscription ${id}: ${missing.length} events never came: ${ranges(missing)} (last before: ${seenAt(last)}, next after: ${seenAt(next)}; ${opsOn(id)})`,
    );
  }
  for (const r of receiver.rejected.slice(0, 10))
    problems.push(`subscription ${r.webhookId}: event ${r.eventId} rejected (${sec(r.at - started)}): ${r.reason}`);
  return { findings, problems };
}

/**
 * One run: sqld on a temp dir behind the counting proxy; the checkout's schema (a server with WEBHOOKS_ENABLED=false, stopped once it
 * listens); the seed (raw SQL, unmetered); then `processes` servers on the proxy. The window opens once all listen (counters reset)
 * and closes at the delivery that completes every subscription, or at `timeoutS`.
 */
async function measure(kind: Result["kind"], checkout: string, round: number, o: Options): Promise<Result> {
  const dir = mkdtempSync(join(tmpdir(), "petstore-bench-webhooks-"));
  const children: ChildProcess[] = [];
  let sqld: SqldServer | undefined;
  let proxy: RowProxy | undefined;
  let receiver: Receiver | undefined;
  let raw: Client | undefined;
  try {
    // Four SQLite connections, as test/properties/multi-process.test.ts chose for several processes on one sqld (scripts/sqld.ts).
    sqld = await startSqld({ dataDir: join(dir, "sqld"), maxConcurrentConnections: 4 });
    proxy = await startRowProxy(sqld.url);
    receiver = await startReceiver(Number(values.latency));
    const r = receiver;
    await stopGracefully((await startServer(checkout, { DATABASE_URL: sqld.url, WEBHOOKS_ENABLED: "false" }, children)).child);
    raw = createClient({ url: sqld.url });
    const seeded = await seed(raw, { subscriptions: o.subscriptions, events: o.events, receiverUrl: r.url, staff: kind === "after" });
    for (const [id, secret] of seeded.secrets) r.secrets.set(id, [secret]);
    const url = proxy.url;
    const concurrency: Record<string, string> = values.concurrency === undefined ? {} : { WEBHOOK_CONCURRENCY: values.concurrency };
    const servers = await Promise.all(Array.from({ length: o.processes }, () => startServer(checkout, { DATABASE_URL: url, ...concurrency }, children)));

    proxy.reset();
    const started = performance.now();
    const before = r.stats().received;
    const sampler = sampleHealth(servers[0]!.base, children);
    let over = false;
    let done: Done[] | undefined;
    const bases = servers.map((s) => s.base);
    const managed = kind === "after" ? manage({ bases, staffKey: seeded.staffKey!, receiver: r, started, label: `${round}`, stopped: () => over }) : [];
    void Promise.resolve(managed).then((d) => {
      done = d;
    });
    const posted = () => done?.filter((d) => d.op.kind === "post" && d.status === 201).length ?? 0;
    const behind = () => [...r.secrets.keys()].filter((id) => (r.distinct.get(id)?.size ?? 0) < o.events + posted());
    const deadline = started + o.timeoutS * 1000;
    while ((done === undefined || behind().length > 0) && performance.now() < deadline) {
      const dead = servers.find((s) => s.child.exitCode !== null || s.child.signalCode !== null);
      if (dead) throw new Error(`${kind} round ${round}: a server exited during the drain:\n${dead.tail()}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const timedOut = done === undefined || behind().length > 0;
    const { received, lastAt } = r.stats();
    const end = timedOut ? performance.now() : lastAt;
    const rows = proxy.rows();
    over = true;
    const health = await sampler.stop();
    while (done === undefined) await new Promise((resolve) => setTimeout(resolve, 50));
    // Late duplicates would come now: each server polls every WEBHOOK_POLL_MS (1 s).
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const eventIds = (await raw.execute("SELECT id FROM events WHERE id > 0 ORDER BY id")).rows.map((row) => Number(row.id));
    const failed = done.filter((d) => typeof d.status !== "number");
    const checked = verify(r, eventIds, done, started);
    const late = behind()
      .slice(0, 3)
      .map((id) => `${id}: ${r.distinct.get(id)?.size ?? 0} of ${o.events + posted()}`);
    if (kind === "after")
      console.error(`  management: ${done.map((d) => `${d.op.kind}${d.op.webhookId ? ` ${d.op.webhookId}` : ""}@${sec(d.at)}`).join(", ")}`);
    return {
      ...{ kind, round, processes: o.processes, expected: eventIds.length * o.subscriptions, measured: received - before },
      ...{ seconds: (end - started) / 1000, rows, health },
      findings: { "timed out": timedOut ? 1 : 0, ...checked.findings, "failed requests": failed.length },
      problems: [
        ...(timedOut
          ? [`timed out after ${o.timeoutS} s with ${n(received - before)} deliveries; ${behind().length} subscriptions behind (${late.join("; ")})`]
          : []),
        ...failed.map((d) => `${d.op.kind} ${d.op.webhookId ?? "category"} at ${sec(d.at)} answered ${d.status}`),
        ...checked.problems,
      ],
    };
  } finally {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    raw?.close();
    await receiver?.close();
    await proxy?.close();
    await sqld?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const n = (x: number, digits = 0) => x.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });

/** The table row of a run. */
function row(r: Result): string {
  const per = (rows: number) => (r.measured > 0 ? n(rows / r.measured, 2) : "–");
  const wrong = Object.entries(r.findings).filter(([, count]) => count > 0);
  const verdict =
    wrong.length === 0 ? "once, in order ✓" : `✗ ${wrong.map(([what, count]) => (what === "timed out" ? what : `${n(count)} ${what}`)).join(", ")}`;
  const rate = r.seconds > 0 ? n(r.measured / r.seconds) : "–";
  const health = `p50 ${n(r.health.p50, 1)} ms, p99 ${n(r.health.p99, 1)} ms`;
  const cells = [r.kind, `round ${r.round}`, `${r.processes} processes`, `${n(r.expected)} deliveries`, `${rate}/s`, `${per(r.rows.read)} read`];
  return `| ${[...cells, `${per(r.rows.written)} written`, health, verdict].join(" | ")} |`;
}

async function main(): Promise<void> {
  if (values.help) return console.log(HELP);
  const o: Options = { subscriptions: count("subscriptions"), events: count("events"), processes: count("processes"), timeoutS: count("timeout") };
  const checkouts: [Result["kind"], string][] = values.before ? [["before", resolve(values.before)]] : [];
  checkouts.push(["after", ROOT]);
  const results: Result[] = [];
  for (let round = 1; round <= count("rounds"); round++) {
    for (const [kind, checkout] of checkouts) {
      console.error(`${kind} round ${round}: ${checkout}, ${o.subscriptions} subscriptions × ${o.events} events, ${o.processes} processes`);
      const r = await measure(kind, checkout, round, o);
      results.push(r);
      console.error(
        `${row(r)}\n  ${n(r.measured)} deliveries in ${n(r.seconds, 1)} s; ${n(r.health.count)} /health (${r.health.failed} failed, max ${n(r.health.max, 1)} ms)`,
      );
      for (const p of r.problems) console.error(`  ${p}`);
    }
  }
  console.log("| code | round | processes | deliveries | per second | rows read / delivery | rows written / delivery | /health | guarantee |");
  console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
  for (const r of results) console.log(row(r));
  const failing = results.filter((r) => r.problems.length > 0);
  for (const r of failing) console.log(`\n${r.kind} round ${r.round}:\n${r.problems.map((p) => `- ${p}`).join("\n")}`);
  if (failing.length > 0) process.exitCode = 1;
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
