/**
 * Metrics on Node (docs/operations.md#metrics): with METRICS_PORT set, the real server serves Prometheus text on that port only — the
 * public port answers 404 — which `promtool check metrics` accepts, and a real Prometheus (Debian's `prometheus`) scrapes and queries.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { telemetrySettings } from "../../src/runtime/node/telemetry";
import { call, type ServerProcess, startServer } from "../support/server-process";

let dir: string;
let server: ServerProcess;
let metricsPort: number;
let prometheus: ChildProcess | undefined;

/** A port free on 127.0.0.1 a moment ago. */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** Poll `fn` until it returns a value, or throw with `what` after `timeoutMs`. */
async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const scrape = async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "petstore-metrics-"));
  metricsPort = await freePort();
  server = await startServer({ databaseUrl: `file:${join(dir, "petstore.db")}`, env: { METRICS_PORT: String(metricsPort), WEBHOOK_POLL_MS: "100" } });
});

afterAll(async () => {
  prometheus?.kill("SIGTERM");
  if (server && !server.exited()) expect(await server.stop()).toBe(0);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

it("serves the metrics on METRICS_PORT only, in a text promtool accepts", async () => {
  expect((await call(server.url, "GET", "/pets?limit=3")).status).toBe(200);
  // The second read is a read-cache hit answered before the app.
  expect((await call(server.url, "GET", "/pets?limit=3")).headers.get("x-cache")).toBe("HIT");
  expect((await call(server.url, "GET", "/metrics")).status).toBe(404);

  // The webhook gauges appear once the dispatcher has polled.
  const text = await until("the webhook backlog gauges", async () => {
    const body = await scrape();
    return body.includes("petstore_webhook_lag_seconds") ? body : undefined;
  });
  const check = spawnSync("promtool", ["check", "metrics"], { input: text, encoding: "utf8" });
  expect(check.stderr + check.stdout).toBe("");
  expect(check.status).toBe(0);

  const series = (name: string) => text.split("\n").filter((line) => line.startsWith(name));
  const reads = series('http_server_request_duration_seconds_count{http_request_method="GET",http_response_status_code="200",http_route="/pets"');
  expect(reads).toHaveLength(1);
  expect(reads[0]).toMatch(/ 2$/);
  expect(series("db_client_operation_duration_seconds_bucket").some((line) => line.includes('db_system_name="sqlite"'))).toBe(true);
  expect(series('petstore_read_cache_lookups_total{petstore_read_cache_outcome="hit"')[0]).toMatch(/ 1$/);
  expect(series('petstore_read_cache_lookups_total{petstore_read_cache_outcome="miss"')[0]).toMatch(/ 1$/);
  for (const outcome of ["delivered", "retried", "given_up"])
    expect(series(`petstore_webhook_deliveries_total{petstore_webhook_outcome="${outcome}"`)).toHaveLength(1);
  for (const kind of ["events", "keys", "idempotency", "deliveries"])
    expect(series(`petstore_retention_deleted_total{petstore_retention_kind="${kind}"`)).toHaveLength(1);
  for (const name of [
    "petstore_webhook_pending_events",
    "petstore_webhook_queued_subscriptions",
    "petstore_webhook_lag_seconds",
    "nodejs_eventloop_delay_p99_seconds",
    "process_memory_usage_bytes",
  ]) {
    expect(series(name), name).toHaveLength(1);
  }
}, 30_000);

it("a real Prometheus scrapes it: the request histogram by route is queryable", async () => {
  const webPort = await freePort();
  writeFileSync(
    join(dir, "prometheus.yml"),
    `global: { scrape_interval: 1s }\nscrape_configs:\n  - job_name: petstore\n    static_configs: [{ targets: ["127.0.0.1:${metricsPort}"] }]\n`,
  );
  const args = [`--config.file=${join(dir, "prometheus.yml")}`, `--storage.tsdb.path=${join(dir, "tsdb")}`, `--web.listen-address=127.0.0.1:${webPort}`];
  prometheus = spawn("prometheus", args, { stdio: "ignore" });
  const query = encodeURIComponent('sum by (http_route) (http_server_request_duration_seconds_count{job="petstore"})');
  const result = await until("a query answered from a scrape", async () => {
    const answer = (await (await fetch(`http://127.0.0.1:${webPort}/api/v1/query?query=${query}`)).json()) as {
      data: { result: { metric: { http_route?: string }; value: [number, string] }[] };
    };
    return answer.data.result.length > 0 ? answer.data.result : undefined;
  });
  // The app's answer and the hit answered before it, both under the route template.
  expect(result.find((r) => r.metric.http_route === "/pets")?.value[1]).toBe("2");
}, 30_000);

it("reads its switches from the environment, and refuses an invalid METRICS_PORT or OTLP protocol", () => {
  expect(telemetrySettings({})).toEqual({ traces: false });
  expect(telemetrySettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).toEqual({ traces: true });
  expect(telemetrySettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SDK_DISABLED: "true" })).toEqual({ traces: false });
  expect(telemetrySettings({ OTEL_TRACES_EXPORTER: "none", OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).toEqual({ traces: false });
  expect(telemetrySettings({ METRICS_PORT: "9464" })).toEqual({ traces: false, metrics: { host: "127.0.0.1", port: 9464 } });
  // Process 2 of a cluster: its own port.
  expect(telemetrySettings({ METRICS_PORT: "9464", METRICS_HOST: "0.0.0.0", PETSTORE_PROCESS_SLOT: "2" })).toEqual({
    traces: false,
    metrics: { host: "0.0.0.0", port: 9466 },
  });
  expect(() => telemetrySettings({ METRICS_PORT: "http" })).toThrow("METRICS_PORT");
  expect(() => telemetrySettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_EXPORTER_OTLP_PROTOCOL: "udp" })).toThrow("OTEL_EXPORTER_OTLP_PROTOCOL");
});
