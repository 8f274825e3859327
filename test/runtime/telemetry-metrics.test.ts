/**
 * Metrics on Node (docs/operations.md#metrics): with METRICS_PORT set, the real server serves Prometheus text on that port only — the
 * public port answers 404 — which `promtool check metrics` accepts, and a real Prometheus (Debian's `prometheus`) scrapes and queries.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { nodeSettings } from "../../src/config";
import { freePort, type Prometheus, startPrometheus, until } from "../support/prometheus";
import { expectHonestMetricsListener } from "../support/metrics-listener";
import { call, type ServerProcess, startServer } from "../support/server-process";

let dir: string;
let server: ServerProcess;
let metricsPort: number;
let prometheus: Prometheus | undefined;

const scrape = async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "petstore-metrics-"));
  metricsPort = await freePort();
  server = await startServer({ databaseUrl: `file:${join(dir, "petstore.db")}`, env: { METRICS_PORT: String(metricsPort), WEBHOOK_POLL_MS: "100" } });
});

afterAll(async () => {
  await prometheus?.stop();
  if (server && !server.exited()) expect(await server.stop()).toBe(0);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

it("serves the metrics on METRICS_PORT only, in a text promtool accepts", async () => {
  expect((await call(server.url, "GET", "/pets?limit=3")).status).toBe(200);
  // The second read is a read-cache hit answered before the app.
  expect((await call(server.url, "GET", "/pets?limit=3")).headers.get("x-cache")).toBe("HIT");
  expect((await call(server.url, "GET", "/metrics")).status).toBe(404);

  const text = await scrape();
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
  expect(series('http_server_request_duration_seconds_count{http_request_method="_OTHER"')).toHaveLength(0);
  for (const name of ["process_memory_usage_bytes", "process_uptime_seconds", "process_open_fds", "v8js_memory_heap_max_bytes"]) {
    expect(series(name), name).toHaveLength(1);
  }
  // Process health by the conventions' names, every value cumulative or current.
  expect(series("process_cpu_time_seconds_total")).toHaveLength(2);
  expect(series("nodejs_eventloop_time_seconds_total")).toHaveLength(2);
  expect(series('v8js_memory_heap_used_bytes{v8js_heap_space_name="old_space"')).toHaveLength(1);
  expect(series('v8js_memory_heap_limit_bytes{v8js_heap_space_name="old_space"')).toHaveLength(1);
  expect(series("http_server_active_requests")).not.toHaveLength(0);
}, 30_000);

it("answers another method 405 with Allow and another path 404, each saying what happened", async () => {
  await expectHonestMetricsListener(metricsPort);
}, 30_000);

it("a real Prometheus scrapes it: the request histogram by route is queryable", async () => {
  prometheus = await startPrometheus([`127.0.0.1:${metricsPort}`]);
  const result = await prometheus.queryUntil('sum by (http_route) (http_server_request_duration_seconds_count{job="petstore"})');
  // The app's answer and the hit answered before it, both under the route template.
  expect(result.find((r) => r.metric.http_route === "/pets")?.value[1]).toBe("2");
}, 30_000);

it("reads its switches from the environment, and refuses an invalid METRICS_PORT or OTLP protocol", () => {
  const settings = (env: Record<string, string>) => nodeSettings(env).telemetry;
  expect(settings({})).toEqual({ traces: false });
  expect(settings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).toEqual({ traces: true });
  expect(settings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SDK_DISABLED: "true" })).toEqual({ traces: false });
  expect(settings({ OTEL_TRACES_EXPORTER: "none", OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).toEqual({ traces: false });
  expect(settings({ METRICS_PORT: "9464" })).toEqual({ traces: false, metrics: { host: "127.0.0.1", port: 9464 } });
  expect(settings({ METRICS_PORT: "9464", METRICS_HOST: "0.0.0.0" })).toEqual({ traces: false, metrics: { host: "0.0.0.0", port: 9464 } });
  expect(() => settings({ METRICS_PORT: "http" })).toThrow("METRICS_PORT");
  expect(() => settings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_EXPORTER_OTLP_PROTOCOL: "udp" })).toThrow(
    /^Invalid configuration: OTEL_EXPORTER_OTLP_PROTOCOL: must be one of http\/protobuf, http\/json, grpc, not "udp"$/,
  );
});

it("event-loop delay is a histogram no scrape resets, and an unknown method is counted as _OTHER", async () => {
  const count = async () => Number(/^nodejs_eventloop_delay_seconds_count\S* (\d+)/m.exec(await scrape())?.[1] ?? Number.NaN);
  const first = await until("a second's event-loop delay", async () => ((await count()) > 0 ? count() : undefined));
  // A second scrape (another Prometheus of an HA pair) finds the count where the first left it, or further.
  expect(await count()).toBeGreaterThanOrEqual(first);
  const res = await fetch(`${server.url}/pets`, { method: "PROPFIND" });
  expect(res.status).toBe(501);
  // The client's unknown method is no failure of the service: no `error_type`, which the error-rate alert selects on.
  expect(await scrape()).toMatch(
    /^http_server_request_duration_seconds_count\{http_request_method="_OTHER",http_response_status_code="501",otel_scope_name="petstore"\} 1$/m,
  );
}, 30_000);
