/**
 * The webhook gauges of a cluster scrape (docs/operations.md#metrics), three server processes on one libSQL server: a subscription's
 * backlog is counted in one process (sqld's own rows-read counter), not in each, and shown once; with the database down, a scrape
 * still answers for every process, without those series, and restarts none.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@libsql/client";
import { afterAll, beforeAll, expect, it } from "vitest";
import { migrateServer, type SqldServer, startSqld } from "../../scripts/sqld";
import { freePort, until } from "../support/prometheus";
import { call, type ServerProcess, startServer } from "../support/server-process";
import { appendEvents, rowsRead } from "../support/sqld-log";
import { BACKLOG_MAX } from "../../src/services/webhooks/backlog";

/** Events the paused subscription waits for; then events after them, none of which the second subscription wants. */
const [BACKLOG, LONG_TAIL] = [3_000, 12_000];

let dir: string;
let sqld: SqldServer;
let server: ServerProcess;
let metricsPort: number;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "petstore-backlog-cost-"));
  sqld = await startSqld({ dataDir: join(dir, "sqld"), admin: true });
  await migrateServer(sqld.url);
  metricsPort = await freePort();
  server = await startServer({ databaseUrl: sqld.url, env: { WEB_CONCURRENCY: "3", METRICS_PORT: String(metricsPort) } });
}, 120_000);

afterAll(async () => {
  if (server && !server.exited()) await server.kill();
  await sqld?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Append `n` events (`appendEvents`), and wait until the dispatch runs fanned them out (a paused subscription keeps its place). */
async function appendAndFanOut(n: number, first?: string): Promise<void> {
  const client = createClient({ url: sqld.url });
  try {
    await appendEvents(client, n, first);
    // After the fan-out, only idle polls read.
    await until("the frontier at the newest event", async () => {
      const { rows } = await client.execute("SELECT (SELECT event_id FROM webhook_dispatch) = (SELECT max(id) FROM events) AS done");
      return rows[0]?.done === 1 ? true : undefined;
    });
  } finally {
    client.close();
  }
}

/** A subscription to `events`, paused at once: its id. */
async function pausedSubscription(events: string[]): Promise<number> {
  const key = server.bootstrapKey!;
  const created = await call(server.url, "POST", "/webhooks", { url: "https://hooks.example.com/petstore", events }, { key });
  expect(created.status).toBe(201);
  const id = (created.body as { id: number }).id;
  expect((await call(server.url, "PATCH", `/webhooks/${id}`, { enabled: false }, { key })).status).toBe(200);
  return id;
}

/** One scrape of the cluster: `series(name, id)`, subscription `id`'s lines of series `name`; `read`, the rows the database read meanwhile. */
async function scrape(): Promise<{ series: (name: string, id: number) => string[]; read: number }> {
  const before = await rowsRead(sqld);
  const lines = (await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()).split("\n");
  const read = (await rowsRead(sqld)) - before;
  return { series: (name, id) => lines.filter((line) => line.startsWith(`${name}{`) && line.includes(`petstore_webhook_id="${id}"`)), read };
}

it("counts a paused subscription's backlog of 3,000 once per scrape, and shows it once", async () => {
  const id = await pausedSubscription(["*"]);
  await appendAndFanOut(BACKLOG);
  const { series, read } = await scrape();
  expect(series("petstore_webhook_subscription_backlog", id)).toEqual([expect.stringMatching(new RegExp(` ${BACKLOG}$`))]);
  // One count reads the 3,000 events; one per process would read 9,000. Idle polls and the listings read a few rows more.
  expect(read).toBeGreaterThanOrEqual(BACKLOG);
  expect(read).toBeLessThan(1.5 * BACKLOG);
}, 60_000);

it("reads at most 10,000 events per subscription behind, whatever its types: one order, then 12,000 events of other types", async () => {
  const id = await pausedSubscription(["order.placed"]);
  await appendAndFanOut(1 + LONG_TAIL, "order.placed");
  const { series, read } = await scrape();
  expect(series("petstore_webhook_subscription_backlog", id)).toEqual([expect.stringMatching(/ 1$/)]);
  expect(series("petstore_webhook_subscription_oldest_age_seconds", id)).toEqual([expect.stringMatching(/ [0-9.]+$/)]);
  // Two subscriptions behind, 10,000 events read for each: counting until 10,000 orders read the whole tail (12,001).
  expect(read).toBeGreaterThanOrEqual(2 * BACKLOG_MAX);
  expect(read).toBeLessThan(2 * BACKLOG_MAX + 1_000);
}, 60_000);

it("a scrape while the database is down: every process answers, none is restarted, the webhook series are left out", async () => {
  await sqld.stop();
  const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
  expect(res.status).toBe(200);
  const lines = (await res.text()).split("\n");
  for (const slot of ["0", "1", "2"]) {
    expect(
      lines.filter((line) => line.startsWith(`petstore_cluster_process_up{petstore_process="${slot}"`)),
      slot,
    ).toEqual([expect.stringMatching(/ 1$/)]);
    expect(
      lines.filter((line) => line.startsWith(`petstore_cluster_restarts_total{petstore_process="${slot}"`)),
      slot,
    ).toEqual([expect.stringMatching(/ 0$/)]);
  }
  expect(lines.filter((line) => line.startsWith("petstore_webhook_subscription_"))).toEqual([]);
}, 30_000);
