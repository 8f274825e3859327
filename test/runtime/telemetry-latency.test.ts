/**
 * True latencies (docs/operations.md#metrics): the duration histograms resolve a sub-millisecond answer. Known durations, timed by an
 * injected clock, go through the request log's timing and the metrics the server exports; a real Prometheus scrapes them and its
 * `histogram_quantile` lands within one bucket of the true quantile. The database and webhook-attempt histograms share the buckets;
 * an attempt that failed is labelled with its `error_type`.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { consoleSink, elapsedMs, jsonLogger } from "../../src/logger";
import { startTelemetry, type Telemetry } from "../../src/runtime/node/otel-sdk";
import { DURATION_BUCKETS } from "../../src/telemetry/instruments";
import { recordRequest } from "../../src/telemetry/metrics";
import { parseConfig } from "../../src/config";
import { attempt } from "../../src/services/webhooks/delivery";
import { openTestDatabase } from "../support/database";
import { TEST_ENV } from "../support/node-target";
import { freePort, type Prometheus, startPrometheus } from "../support/prometheus";

let telemetry: Telemetry | undefined;
let prometheus: Prometheus;
let metricsPort: number;

beforeAll(async () => {
  metricsPort = await freePort();
  telemetry = await startTelemetry({ traces: false, metrics: { host: "127.0.0.1", port: metricsPort } }, jsonLogger("info", consoleSink));
  prometheus = await startPrometheus([`127.0.0.1:${metricsPort}`]);
});

afterAll(async () => {
  await prometheus?.stop();
  await telemetry?.shutdown();
});

/** The bucket bounds around `seconds`: the largest bound below it and the smallest at or above it. */
function bucketAround(seconds: number): [number, number] {
  const upper = DURATION_BUCKETS.findIndex((bound) => bound >= seconds);
  return [upper > 0 ? DURATION_BUCKETS[upper - 1]! : 0, DURATION_BUCKETS[upper]!];
}

it("request durations of tens of µs to a few ms come back from Prometheus within one bucket", async () => {
  // 100 requests: 60 of 40 µs, 30 of 300 µs, 10 of 1.8 ms (true p50 40 µs, p90 300 µs, p99 1.8 ms).
  const known = [...Array(60).fill(0.04), ...Array(30).fill(0.3), ...Array(10).fill(1.8)];
  for (const ms of known) {
    const durationMs = elapsedMs(1000, () => 1000 + ms);
    recordRequest({ requestId: "r", method: "GET", route: "/known", status: 200, durationMs, dbRoundTrips: 0, cache: null, accountId: null });
  }
  const sum = await prometheus.queryUntil('http_server_request_duration_seconds_sum{http_route="/known"}');
  // Recorded unrounded: 60·40 µs + 30·300 µs + 10·1.8 ms.
  expect(Number(sum[0]!.value[1])).toBeCloseTo(0.0294, 9);
  for (const [q, truth] of [
    [0.5, 0.00004],
    [0.9, 0.0003],
    [0.99, 0.0018],
  ] as const) {
    const [answer] = await prometheus.query(`histogram_quantile(${q}, sum by (le) (http_server_request_duration_seconds_bucket{http_route="/known"}))`);
    const [low, high] = bucketAround(truth);
    expect(Number(answer!.value[1]), `p${q * 100}`).toBeGreaterThanOrEqual(low);
    expect(Number(answer!.value[1]), `p${q * 100}`).toBeLessThanOrEqual(high);
  }
}, 30_000);

it("database round trips and webhook attempts are measured on the same buckets, from 100 µs", async () => {
  const db = telemetry!.database(await openTestDatabase(":memory:"));
  await db.execute("SELECT 1");
  // A webhook attempt, as the dispatcher makes it (its receiver answered 204 at once).
  const target = { webhookId: 1, url: "http://127.0.0.1:9/hook", secrets: [`whsec_${btoa("k".repeat(24))}`] };
  const message = { eventId: 1, eventType: "category.created", messageId: "evt_1", body: "{}", traceparent: null };
  const config = parseConfig({ ...TEST_ENV, WEBHOOKS_ALLOW_PRIVATE: "true" });
  expect((await attempt(target, message, { config, at: new Date(), fetch: async () => new Response(null, { status: 204 }) })).ok).toBe(true);
  for (const name of ["db_client_operation_duration_seconds_bucket", "petstore_webhook_attempt_duration_seconds_bucket"]) {
    const buckets = await prometheus.queryUntil(`${name}{le="0.0001"}`);
    expect(buckets.length, name).toBeGreaterThan(0);
  }
}, 30_000);

it("a webhook attempt that failed without throwing is measured under its error.type", async () => {
  const target = { webhookId: 2, url: "http://127.0.0.1:9/hook", secrets: [`whsec_${btoa("k".repeat(24))}`] };
  const message = { eventId: 2, eventType: "category.created", messageId: "evt_2", body: "{}", traceparent: null };
  const config = parseConfig({ ...TEST_ENV, WEBHOOKS_ALLOW_PRIVATE: "true" });
  const answered = await attempt(target, message, { config, at: new Date(), fetch: async () => new Response(null, { status: 503 }) });
  expect(answered.error).toBe("http_status");
  const refused = await attempt(target, message, { config, at: new Date(), fetch: async () => Promise.reject(new Error("connect ECONNREFUSED")) });
  expect(refused.error).toBe("refused");
  for (const errorType of ["http_status", "refused"]) {
    const [count] = await prometheus.queryUntil(`petstore_webhook_attempt_duration_seconds_count{error_type="${errorType}"}`);
    expect(Number(count!.value[1]), errorType).toBe(1);
  }
}, 30_000);

it("a request the service failed carries error_type, its status; a 501 (the client's method) and a 4xx carry none", async () => {
  const line = { requestId: "r", route: "/things", durationMs: 1, dbRoundTrips: 0, cache: null, accountId: null };
  for (const [method, status] of [
    ["PUT", 500],
    ["PUT", 501],
    ["PUT", 404],
    ["DELETE", 503],
  ] as const)
    recordRequest({ ...line, method, status });
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const counts = text.split("\n").filter((l) => l.startsWith("http_server_request_duration_seconds_count{") && l.includes('http_route="/things"'));
  expect(counts.map((l) => [/status_code="(\d+)"/.exec(l)?.[1], /error_type="(\w*)"/.exec(l)?.[1]]).sort()).toEqual([
    ["404", undefined],
    ["500", "500"],
    ["501", undefined],
    ["503", "503"],
  ]);
});
