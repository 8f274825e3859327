/**
 * What a backlog drain costs the Worker's database (docs/database-cost.md#metrics-scrapes), counted by sqld itself (its admin API) on a
 * sqld of this file's own: ten subscriptions 1,500 events behind are sent their 15,000 deliveries in runs of at most 2,000 attempts;
 * each run's `webhook dispatch` line gives the oldest event's age of the subscriptions it served, not a count of their backlogs.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@libsql/client";
import { afterAll, beforeAll, expect, it } from "vitest";
import { migrateServer, type SqldServer, startSqld } from "../../scripts/sqld";
import { connect, type ApiClient } from "../support/client";
import { appendEvents, rowsRead } from "../support/sqld-log";
import { createStaffKeyFor } from "../support/staff-key";
import { Receiver } from "../support/webhook-receiver";
import { ownWorkerTarget, type WorkerTarget } from "../support/worker-target";
import { subscribe } from "../scenarios/webhooks.scenarios";

const [SUBSCRIPTIONS, BEHIND] = [10, 1_500];

let dir: string;
let sqld: SqldServer;
let target: WorkerTarget;
let api: ApiClient;
let key: string;
let receiver: Receiver;
let db: ReturnType<typeof createClient>;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "petstore-drain-cost-"));
  sqld = await startSqld({ dataDir: join(dir, "sqld"), admin: true });
  await migrateServer(sqld.url);
  db = createClient({ url: sqld.url });
  key = await createStaffKeyFor(db as never);
  target = await ownWorkerTarget({}, { databaseUrl: sqld.url });
  api = await connect(target);
  receiver = await Receiver.start();
}, 60_000);
afterAll(async () => {
  await receiver?.close();
  await target?.close();
  db?.close();
  await sqld?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

it("drains ten subscriptions 1,500 events behind at under 6.3 rows read per delivery", async () => {
  const paths = Array.from({ length: SUBSCRIPTIONS }, (_, n) => `/drain/${n}`);
  const ids: number[] = [];
  for (const path of paths) ids.push((await subscribe(api, key, receiver.url(path))).id);
  for (const id of ids) expect((await api.patch(`/webhooks/${id}`, { enabled: false }, { key })).status).toBe(200);
  await appendEvents(db, BEHIND);
  const before = await rowsRead(sqld);
  for (const id of ids) expect((await api.patch(`/webhooks/${id}`, { enabled: true }, { key })).status).toBe(200);
  for (const path of paths) await receiver.waitFor(path, BEHIND);
  // The last run records its sends, then writes its line.
  for (let done = false; !done; await new Promise((resolve) => setTimeout(resolve, 100))) {
    const { rows } = await db.execute("SELECT count(*) AS n FROM webhooks WHERE place IS NOT NULL OR lease_token IS NOT NULL");
    done = rows[0]?.n === 0;
  }
  const perDelivery = ((await rowsRead(sqld)) - before) / (SUBSCRIPTIONS * BEHIND);
  // The drain's own reads are 4.9–5.2 a delivery here; counting each served subscription's backlog after every run made it 7.6–8.0.
  expect(perDelivery).toBeGreaterThan(3);
  expect(perDelivery).toBeLessThan(6.3);
}, 120_000);
