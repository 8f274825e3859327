/**
 * Webhook signals per subscription and exporter failures on the real Node server (docs/operations.md#metrics): a scrape of METRICS_PORT
 * shows each subscription's attempts by outcome as deliveries succeed, fail and are given up, its backlog and oldest undelivered age, and
 * none of a deleted subscription's series; span exports to a collector that answers 503 are counted and logged once a minute at most.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { freePort, until } from "../support/prometheus";
import { call, type ServerProcess, startServer } from "../support/server-process";
import { Receiver } from "../support/webhook-receiver";

let dir: string;
let server: ServerProcess;
let hooks: Receiver;
let collector: Server;
let collectorPosts = 0;
let metricsPort: number;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "petstore-webhook-metrics-"));
  hooks = await Receiver.start();
  // A collector that is down for maintenance: every export gets 503.
  collector = createServer((req, res) => {
    collectorPosts += 1;
    req.resume().on("end", () => res.writeHead(503, { "Retry-After": "0" }).end());
  });
  await new Promise<void>((resolve) => collector.listen(0, "127.0.0.1", resolve));
  metricsPort = await freePort();
  server = await startServer({
    databaseUrl: `file:${join(dir, "petstore.db")}`,
    env: {
      METRICS_PORT: String(metricsPort),
      WEBHOOK_POLL_MS: "100",
      WEBHOOKS_ALLOW_PRIVATE: "true",
      WEBHOOK_MAX_ATTEMPTS: "2",
      WEBHOOK_RETRY_BASE_MS: "1",
      WEBHOOK_RETRY_CAP_MS: "1",
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(collector.address() as AddressInfo).port}`,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_BSP_SCHEDULE_DELAY: "50",
    },
  });
});

afterAll(async () => {
  if (server && !server.exited()) expect(await server.stop()).toBe(0);
  await hooks?.close();
  await new Promise((resolve) => collector?.close(resolve));
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const scrape = async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();

/** The value of the series `name{labels…}` in a scrape, undefined when absent. */
function value(text: string, name: string, labels: Record<string, string | number>): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${name}{`) && Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
}

it("counts each subscription's attempts by outcome, shows its backlog and age, and drops a deleted one's series", async () => {
  const key = server.bootstrapKey!;
  hooks.on("/fails", () => 500);
  const subscribe = async (path: string) => {
    const created = await call(server.url, "POST", "/webhooks", { url: hooks.url(path), events: ["category.created"] }, { key });
    expect(created.status).toBe(201);
    return (created.body as { id: number }).id;
  };
  const ok = await subscribe("/ok");
  const failing = await subscribe("/fails");
  for (const name of ["One", "Two"]) expect((await call(server.url, "POST", "/categories", { name, description: "x" }, { key })).status).toBe(201);

  const attempts = "petstore_webhook_subscription_attempts_total";
  const id = (webhookId: number, outcome: string) => ({ petstore_webhook_id: webhookId, petstore_webhook_outcome: outcome });
  // Two events, two attempts each for the failing one (WEBHOOK_MAX_ATTEMPTS=2): both given up; the backlog is read at the next poll.
  const caughtUp = (body: string) =>
    [ok, failing].every((webhookId) => value(body, "petstore_webhook_subscription_backlog", { petstore_webhook_id: webhookId }) === 0);
  const text = await until("every attempt counted", async () => {
    const body = await scrape();
    const counted = value(body, attempts, id(failing, "given_up")) === 2 && value(body, attempts, id(ok, "delivered")) === 2;
    return counted && caughtUp(body) ? body : undefined;
  });
  expect(value(text, attempts, id(ok, "failed"))).toBe(0);
  expect(value(text, attempts, id(ok, "given_up"))).toBe(0);
  expect(value(text, attempts, id(failing, "failed"))).toBe(4);
  expect(value(text, attempts, id(failing, "delivered"))).toBe(0);
  for (const webhookId of [ok, failing]) {
    expect(value(text, "petstore_webhook_subscription_backlog", { petstore_webhook_id: webhookId })).toBe(0);
    expect(value(text, "petstore_webhook_subscription_oldest_age_seconds", { petstore_webhook_id: webhookId })).toBe(0);
  }

  expect((await call(server.url, "DELETE", `/webhooks/${failing}`, undefined, { key })).status).toBe(204);
  const after = await scrape();
  expect(after).not.toContain(`petstore_webhook_id="${failing}"`);
  expect(value(after, attempts, id(ok, "delivered"))).toBe(2);
});

it("counts span exports a collector refuses, and logs them at most once a minute", async () => {
  // Requests above made spans; each export to the 503 collector fails.
  await server.line(/"msg":"telemetry export failed"/, 0, 20_000);
  await until("exports refused", async () => {
    const failures = value(await scrape(), "petstore_telemetry_export_failures_total", {}) ?? 0;
    return failures >= 2 ? failures : undefined;
  });
  expect(collectorPosts).toBeGreaterThanOrEqual(2);
  const lines = server
    .output()
    .split("\n")
    .filter((line) => line.includes('"msg":"telemetry export failed"'));
  expect(lines).toHaveLength(1);
  expect(JSON.parse(lines[0]!)).toMatchObject({ level: "warn", failures: 1 });
});
