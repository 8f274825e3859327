/**
 * Metrics of a cluster in one scrape (docs/operations.md#metrics): with WEB_CONCURRENCY=2 the primary serves METRICS_PORT, every sample
 * labelled with its process (`petstore_process`: the slot, or `primary`), in a text promtool accepts and a real Prometheus scrapes; a
 * server process killed is replaced, and the scrape counts the restart for its slot and shows its successor; the primary names the
 * service and its version; a server process stopped (SIGSTOP) does not hold the scrape past the primary's 1 s: it is shown down; a
 * subscription's backlog and oldest age, which every process reads from the database, are one series each, not one per process.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { version } from "../../package.json";
import { PROCESS_ANSWER_MS } from "../../src/runtime/node/cluster-metrics";
import { freePort, type Prometheus, startPrometheus, until } from "../support/prometheus";
import { expectHonestMetricsListener } from "../support/metrics-listener";
import { call, type ServerProcess, startServer } from "../support/server-process";

let dir: string;
let server: ServerProcess;
let metricsPort: number;
let prometheus: Prometheus | undefined;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "petstore-cluster-metrics-"));
  metricsPort = await freePort();
  server = await startServer({
    databaseUrl: `file:${join(dir, "petstore.db")}`,
    env: { WEB_CONCURRENCY: "2", METRICS_PORT: String(metricsPort) },
  });
}, 120_000);

afterAll(async () => {
  await prometheus?.stop();
  if (server && !server.exited()) await server.kill();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const scrape = async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
/** The lines of `text` that start with `prefix`. */
const lines = (text: string, prefix: string) => text.split("\n").filter((line) => line.startsWith(prefix));
/** The process id a process's `target_info` names. */
const pidOf = (text: string, process: string) => /process_pid="(\d+)"/.exec(lines(text, `target_info{petstore_process="${process}"`)[0] ?? "")?.[1];

it("one scrape shows every server process and the primary, labelled, in a text promtool accepts", async () => {
  expect((await call(server.url, "GET", "/pets?limit=1")).status).toBe(200);
  const text = await scrape();
  const check = spawnSync("promtool", ["check", "metrics"], { input: text, encoding: "utf8" });
  expect(check.stderr + check.stdout).toBe("");
  for (const process of ["0", "1", "primary"]) expect(lines(text, `process_uptime_seconds{petstore_process="${process}"`), process).toHaveLength(1);
  for (const slot of ["0", "1"]) {
    expect(lines(text, `petstore_cluster_restarts_total{petstore_process="${slot}"`)[0]).toMatch(/ 0$/);
    expect(lines(text, `petstore_cluster_process_up{petstore_process="${slot}"`)[0]).toMatch(/ 1$/);
  }
  expect(lines(text, "# TYPE process_uptime_seconds ")).toHaveLength(1);
  expect(lines(text, "http_server_request_duration_seconds_count{").length).toBeGreaterThan(0);
}, 30_000);

it("answers another method 405 with Allow and another path 404, each saying what happened", async () => {
  await expectHonestMetricsListener(metricsPort);
}, 30_000);

it("a real Prometheus scrapes it as one target with three processes", async () => {
  prometheus = await startPrometheus([`127.0.0.1:${metricsPort}`]);
  const result = await prometheus.queryUntil('count by (petstore_process) (process_uptime_seconds{job="petstore"})');
  expect(result.map((sample) => sample.metric.petstore_process).sort()).toEqual(["0", "1", "primary"]);
}, 30_000);

it("a server process killed is replaced: the scrape counts the restart for its slot and shows its successor", async () => {
  const before = await scrape();
  const killed = pidOf(before, "1");
  expect(killed).toMatch(/^\d+$/);
  process.kill(Number(killed), "SIGKILL");
  const after = await until("the successor of slot 1 in the scrape", async () => {
    const text = await scrape();
    const successor = pidOf(text, "1");
    return successor && successor !== killed ? text : undefined;
  });
  expect(lines(after, 'petstore_cluster_restarts_total{petstore_process="1"')[0]).toMatch(/ 1$/);
  expect(lines(after, 'petstore_cluster_restarts_total{petstore_process="0"')[0]).toMatch(/ 0$/);
  expect(pidOf(after, "0")).toBe(pidOf(before, "0"));
}, 60_000);

it("the primary names the service and its version; every process has its start time beside its uptime", async () => {
  const text = await scrape();
  const primary = lines(text, 'target_info{petstore_process="primary"')[0];
  expect(primary).toContain('service_name="petstore"');
  expect(primary).toContain(`service_version="${version}"`);
  for (const process of ["0", "1", "primary"]) {
    const started = Number(lines(text, `process_start_time_seconds{petstore_process="${process}"`)[0]?.split(" ").pop());
    expect(started, process).toBeGreaterThan(Date.now() / 1000 - 600);
    expect(started, process).toBeLessThanOrEqual(Date.now() / 1000);
  }
}, 30_000);

it("a stopped server process: the primary still answers 200 within 1 s, with that process down and the other's series", async () => {
  // The primary waits PROCESS_ANSWER_MS for each process, all at once, then answers: 1 s in all leaves it 200 ms for its own text.
  expect(PROCESS_ANSWER_MS).toBeLessThanOrEqual(800);
  const stopped = Number(pidOf(await scrape(), "0"));
  process.kill(stopped, "SIGSTOP");
  try {
    const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`, { signal: AbortSignal.timeout(20_000) });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(lines(text, 'petstore_cluster_process_up{petstore_process="0"')[0]).toMatch(/ 0$/);
    expect(lines(text, 'petstore_cluster_process_up{petstore_process="1"')[0]).toMatch(/ 1$/);
    expect(lines(text, 'process_uptime_seconds{petstore_process="0"')).toEqual([]);
    expect(lines(text, 'process_uptime_seconds{petstore_process="1"')).toHaveLength(1);
  } finally {
    process.kill(stopped, "SIGCONT");
  }
  await until("slot 0 answering again", async () => (/petstore_cluster_process_up\{petstore_process="0"[^\n]* 1\n/.test(await scrape()) ? true : undefined));
}, 60_000);

it("shows a subscription's backlog and oldest age once, without a process label; its attempts per process", async () => {
  const key = server.bootstrapKey!;
  const created = await call(server.url, "POST", "/webhooks", { url: "https://hooks.example.com/petstore", events: ["category.created"] }, { key });
  expect(created.status).toBe(201);
  const id = `petstore_webhook_id="${(created.body as { id: number }).id}"`;
  const of = (text: string, name: string) => lines(text, `${name}{`).filter((line) => line.includes(id));
  const text = await until("the subscription's series", async () => {
    const body = await scrape();
    return of(body, "petstore_webhook_subscription_attempts_total").length === 6 ? body : undefined;
  });
  const check = spawnSync("promtool", ["check", "metrics"], { input: text, encoding: "utf8" });
  expect(check.stderr + check.stdout).toBe("");
  for (const name of ["petstore_webhook_subscription_backlog", "petstore_webhook_subscription_oldest_age_seconds"]) {
    const samples = of(text, name);
    expect(samples, name).toHaveLength(1);
    expect(samples[0], name).not.toContain("petstore_process=");
    expect(samples[0], name).toMatch(/ 0$/);
  }
  // Attempts are each process's own: 3 outcomes × 2 server processes.
  expect(of(text, "petstore_webhook_subscription_attempts_total").filter((line) => line.includes('petstore_process="0"'))).toHaveLength(3);
  expect((await call(server.url, "DELETE", `/webhooks/${(created.body as { id: number }).id}`, undefined, { key })).status).toBe(204);
}, 30_000);
