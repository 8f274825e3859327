/**
 * The database bill (`npm run bench -- --rows`; also the last section of the default run): rows read and
 * written as sqld counts them (`rows_read`, `rows_written` of every statement, which Turso and D1 bill),
 * on the cost test's generated dataset (test/support/database-cost.ts, scale 1: 10,000 pets, 20,000
 * orders, 50,000 events, 116,000 delivery log entries, 20 subscriptions of which 14 take every event).
 *
 * The app runs in process with a warm key cache and no read cache (every request reaches the
 * database: an upper bound where Node's read cache or Workers Cache would answer), clock fixed.
 * Measured: each operation of the bench's mix and a few more, `SAMPLES` requests each with varied
 * ids; one `dispatchDue` after each write (its webhook work); an idle dispatch run as the Node
 * server polls; retention (`pruneExpired`) on the dataset as generated and the runs after it.
 * bench/rows-report.ts turns the measurements into the mix, the background jobs per hour and a month.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createApp } from "../src/app";
import { parseConfig } from "../src/config";
import { pruneExpired } from "../src/services/retention";
import { dispatchDue } from "../src/services/webhooks/dispatch";
import { SubscribedTypes } from "../src/services/webhooks/interest";
import { datasetSize, startCostDatabase, type Cost, type CostDatabase } from "../test/support/database-cost";

const NOW = new Date("2026-11-20T12:00:00.000Z");
/** Requests measured per operation (and writes, each followed by a dispatch run). */
export const SAMPLES = 20;
const config = parseConfig({
  RATE_LIMIT_ANON_PER_MIN: "100000000",
  RATE_LIMIT_KEY_PER_MIN: "100000000",
  RATE_LIMIT_SIGNUP_PER_HOUR: "100000000",
  WEBHOOKS_ALLOW_PRIVATE: "true",
  LOG_LEVEL: "error",
});

type Who = "anon" | "staff" | "customer";
/** Rows per unit of work (a request, a run). */
export interface Rows {
  read: number;
  written: number;
}
/** One measured operation: its mean rows per request, and for a write the mean of the dispatch run after it. */
interface OperationRows extends Rows {
  name: string;
  /** Share of the mix's requests (0 when not in the mix). */
  weight: number;
  webhook?: Rows;
  /** A write: events it committed and deliveries its dispatch run created, per request. */
  created?: { events: number; deliveries: number };
}
/** Everything `formatRowsBill` (bench/rows-report.ts) prints. */
export interface RowsBill {
  dataset: Record<string, number>;
  operations: OperationRows[];
  /** Per request of the mix, and the webhook work per write of the mix. */
  mix: Rows & { webhookPerWrite: Rows; createdPerWrite: { events: number; deliveries: number }; writeShare: number };
  /** An idle dispatch run as the Node server makes it, and its runs per hour (WEBHOOK_POLL_MS). */
  idlePoll: Rows & { perHour: number };
  /** Retention runs one after another from the dataset as generated: rows, rows deleted, events deleted. */
  retention: (Rows & { deleted: number; events: number })[];
  /** Rows per finished delivery deleted (the pruning statement of retention's first run). */
  deliveryDelete: Rows;
}

interface Op {
  name: string;
  who: Who;
  weight: number;
  method?: "POST" | "PUT";
  path: (i: number) => string;
  body?: (i: number) => unknown;
}

const rows = (cost: Cost): Rows => ({ read: cost.rowsRead, written: cost.rowsWritten });
const mean = (xs: Rows[]): Rows => ({
  read: xs.reduce((n, x) => n + x.read, 0) / Math.max(1, xs.length),
  written: xs.reduce((n, x) => n + x.written, 0) / Math.max(1, xs.length),
});

/** The operations: the bench's mix (bench/scenarios.ts, weights as its mix draws them) and a few more. */
function operations(ids: { pets: number; stock: number[]; recentEvent: number }): Op[] {
  const pet = (i: number) => 1 + ((i * 7919 + 13) % ids.pets);
  const read = 0.9 / 5;
  const write = 0.1 / 2;
  return [
    { name: "GET /pets/{petId}", who: "anon", weight: read, path: (i) => `/pets/${pet(i)}` },
    { name: "GET /pets?id=", who: "anon", weight: read, path: (i) => `/pets?id=${pet(i)}` },
    { name: "GET /pets?status=available&limit=20", who: "anon", weight: read, path: () => "/pets?status=available&limit=20" },
    { name: "GET /store/inventory", who: "anon", weight: read, path: () => "/store/inventory" },
    { name: "GET /store/orders?limit=20 (customer)", who: "customer", weight: read, path: () => "/store/orders?limit=20" },
    {
      name: "POST /store/orders",
      who: "customer",
      weight: write,
      method: "POST",
      path: () => "/store/orders",
      body: (i) => ({ petId: ids.stock[i], quantity: 1 }),
    },
    {
      name: "PUT /store/inventory/{petId}",
      who: "staff",
      weight: write,
      method: "PUT",
      path: (i) => `/store/inventory/${ids.stock[SAMPLES + i]}`,
      body: (i) => ({ quantity: 500_000 + i }),
    },
    { name: "GET /categories", who: "anon", weight: 0, path: () => "/categories" },
    { name: "GET /events?after=", who: "staff", weight: 0, path: (i) => `/events?after=${ids.recentEvent - 37 * i}` },
    { name: "GET /webhooks/{webhookId}/deliveries", who: "staff", weight: 0, path: (i) => `/webhooks/${1 + (i % 20)}/deliveries` },
    { name: "GET /store/orders?complete=false (staff)", who: "staff", weight: 0, path: () => "/store/orders?complete=false" },
    { name: "GET /store/inventory?status=available", who: "anon", weight: 0, path: () => "/store/inventory?status=available" },
    {
      name: "GET /pets?categoryId=&status=available",
      who: "anon",
      weight: 0,
      path: (i) => `/pets?categoryId=${1 + (i % 20)}&status=available`,
    },
  ];
}

/** A webhook receiver answering 204 to everything (the deliveries of the dispatch runs). */
async function startReceiver(): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => res.writeHead(204).end());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** Retention runs from the dataset as generated until one deletes nothing (at most 20), and the cost per delivery deleted. */
async function retentionRuns(db: CostDatabase): Promise<Pick<RowsBill, "retention" | "deliveryDelete">> {
  const runs: RowsBill["retention"] = [];
  const deliveries: Cost["statements"] = [];
  do {
    const { value: report, cost } = await db.meter.measure(() => pruneExpired(db.meter.database(), config.eventRetentionDays, NOW));
    runs.push({ ...rows(cost), deleted: report.events + report.keys + report.idempotency + report.deliveries, events: report.events });
    deliveries.push(...cost.statements.filter((st) => /^delete from "webhook_deliveries"/i.test(st.sql) && st.affectedRows > 0));
  } while (runs.at(-1)!.deleted > 0 && runs.length < 20);
  const sum = (pick: (st: Cost["statements"][number]) => number) => deliveries.reduce((n, st) => n + pick(st), 0);
  const deleted = sum((st) => st.affectedRows) || 1;
  return { retention: runs, deliveryDelete: { read: sum((st) => st.rowsRead) / deleted, written: sum((st) => st.rowsWritten) / deleted } };
}

/**
 * Measure the bill on a fresh sqld with the generated dataset at `scale` (default 1); takes seconds.
 * @returns the measurements `formatRowsBill` prints.
 * @throws when a request of an operation does not succeed.
 */
export async function measureRowsBill(scale = 1): Promise<RowsBill> {
  const receiver = await startReceiver();
  const db = await startCostDatabase({ scale, now: NOW, hookUrl: (id) => `${receiver.url}/hook/${id}` });
  try {
    const dataset = await db.counts();
    const recently = new Date(NOW.getTime() - 30_000);
    const keys: Record<Exclude<Who, "anon">, string[]> = { staff: [await db.addKey(1, recently)], customer: [] };
    for (let account = 2; account < 2 + SAMPLES; account++) keys.customer.push(await db.addKey(account, recently));
    const stock = (await db.raw.execute(`SELECT pet_id FROM inventory WHERE quantity = 5 ORDER BY pet_id LIMIT ${2 * SAMPLES}`)).rows.map((r) => Number(r[0]));
    const ops = operations({ pets: datasetSize(scale).pets, stock, recentEvent: datasetSize(scale).events - 50 });

    const app = createApp({ db: () => db.meter.database(), config, log: () => {}, clock: () => NOW });
    const send = async (op: Op, i: number) => {
      const key = op.who === "anon" ? undefined : keys[op.who][i % keys[op.who].length];
      const headers: Record<string, string> = key ? { Authorization: `Bearer ${key}` } : {};
      if (op.body) headers["Content-Type"] = "application/json";
      const path = op.path(i);
      const res = await app.request(`http://localhost${path}`, { method: op.method ?? "GET", headers, body: op.body && JSON.stringify(op.body(i)) });
      const text = await res.text();
      if (!res.ok) throw new Error(`${op.method ?? "GET"} ${path}: ${res.status} ${text.slice(0, 300)}`);
    };
    // Warm the key cache: every key verified once (unmeasured).
    for (const [i] of keys.customer.entries()) await send({ name: "", who: "customer", weight: 0, path: () => "/accounts/me" }, i);
    await send({ name: "", who: "staff", weight: 0, path: () => "/accounts/me" }, 0);

    const pruning = await retentionRuns(db);
    // The dispatcher of the Node server: interest learned by runs that work; the timer's polls do not learn.
    const dispatch = (interest = new SubscribedTypes(), poll = false) =>
      dispatchDue(db.meter.database(), { config, now: () => NOW, fetch: (input, init) => fetch(input, init), random: () => 0.5, interest, poll });
    for (let due = true; due; ) due = (await dispatch()).attempted > 0; // anything the dataset left due (unmeasured)
    const idle = rows((await db.meter.measure(() => dispatch(new SubscribedTypes(), true))).cost);

    const interest = new SubscribedTypes();
    const operationsRows: OperationRows[] = [];
    for (const op of ops) {
      const requests: Rows[] = [];
      const runs: Rows[] = [];
      const created: Rows[] = []; // read: events committed (an uncounted look-up), written: deliveries sent by the run
      const lastEvent = () => db.scalar("SELECT coalesce(max(id), 0) FROM events");
      for (let i = 0; i < SAMPLES; i++) {
        const before = await lastEvent();
        requests.push(rows((await db.meter.measure(() => send(op, i))).cost));
        if (!op.method) continue;
        const { value: report, cost } = await db.meter.measure(() => dispatch(interest));
        runs.push(rows(cost));
        created.push({ read: (await lastEvent()) - before, written: report.attempted });
      }
      const made = mean(created);
      const write = op.method ? { webhook: mean(runs), created: { events: made.read, deliveries: made.written } } : {};
      operationsRows.push({ name: op.name, weight: op.weight, ...mean(requests), ...write });
    }
    const inMix = operationsRows.filter((o) => o.weight > 0);
    const weighted = (pick: (o: OperationRows) => number) => inMix.reduce((n, o) => n + o.weight * pick(o), 0);
    const writes = inMix.filter((o) => o.webhook);
    const writeShare = writes.reduce((n, o) => n + o.weight, 0);
    const perWrite = (pick: (o: OperationRows) => number) => writes.reduce((n, o) => n + (o.weight / writeShare) * pick(o), 0);
    return {
      dataset,
      operations: operationsRows,
      mix: {
        read: weighted((o) => o.read),
        written: weighted((o) => o.written),
        webhookPerWrite: { read: perWrite((o) => o.webhook!.read), written: perWrite((o) => o.webhook!.written) },
        createdPerWrite: { events: perWrite((o) => o.created!.events), deliveries: perWrite((o) => o.created!.deliveries) },
        writeShare,
      },
      idlePoll: { ...idle, perHour: 3_600_000 / config.webhooks.pollIntervalMs },
      ...pruning,
    };
  } finally {
    await db.stop();
    await receiver.close();
  }
}
