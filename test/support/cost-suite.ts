/**
 * A cost test file's setting (docs/database-cost.md): the app on sqld over the generated dataset
 * (test/support/database-cost.ts), keys and fixture ids, and `judge`, which records a measurement in the
 * table printed after the file and asserts its budget. Each file that calls `useCostSuite` gets a dataset
 * of its own, so background work can change it freely.
 */
import { afterAll, beforeAll, expect } from "vitest";
import { createApp } from "../../src/app";
import { parseConfig } from "../../src/config";
import { nodeAssets } from "../../src/runtime/node/assets";
import { dispatchDue } from "../../src/services/webhooks/dispatch";
import type { SubscribedTypes } from "../../src/services/webhooks/interest";
import { costliest, datasetSize, formatCostTable, startCostDatabase, type Cost, type CostDatabase, type CostRow } from "./database-cost";
import { TEST_ENV } from "./node-target";
import { Receiver } from "./webhook-receiver";

/** Dataset scale: `COST_SCALE=10 npm test -- test/architecture/database-cost.test.ts` checks that costs do not grow with size. */
export const SCALE = Number(process.env.COST_SCALE ?? "1");
export const NOW = new Date("2026-11-20T12:00:00.000Z");
export const SIZE = datasetSize(SCALE);
export const config = parseConfig(TEST_ENV);
/** Most rows one DELETE statement may delete (docs/database-cost.md: unbounded deletes run in bounded rounds). */
export const MAX_DELETED = 1000;

export type Who = "anon" | "staff" | "customer";
/** Ids the operations address: fixtures found in the generated data, and resources the writes create. */
export type Ids = Record<string, number>;
interface Answer {
  status: number;
  headers: Headers;
  body: unknown;
}

export let db: CostDatabase;
export let receiver: Receiver;
export const keys: Record<Who, string | undefined> = { anon: undefined, staff: undefined, customer: undefined };
export const ids: Ids = {};
export const table: CostRow[] = [];
type App = ReturnType<typeof createApp>;
export let warm: App;

/** An app on the metered sqld, a new database handle per request, clock fixed at `NOW`. */
export const newApp = () => createApp({ db: () => db.meter.database(), config, log: () => {}, assets: nodeAssets(), clock: () => NOW });

export async function send(app: App, method: string, path: string, who: Who, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const h: Record<string, string> = { ...headers };
  if (keys[who]) h.Authorization = `Bearer ${keys[who]}`;
  if (body !== undefined) h["Content-Type"] = "application/json";
  const res = await app.request(`http://localhost${path}`, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  const json = (res.headers.get("Content-Type") ?? "").startsWith("application/json") && text ? (JSON.parse(text) as unknown) : text;
  return { status: res.status, headers: res.headers, body: json };
}

/** The path of the next page of `path` (its `Link: rel="next"`). */
export async function nextPage(path: string, who: Who): Promise<string> {
  const link = (await send(warm, "GET", path, who)).headers.get("Link") ?? "";
  const next = /<([^>]+)>;\s*rel="next"/.exec(link)?.[1];
  if (!next) throw new Error(`${path} has no next page (Link: ${link})`);
  return next;
}

/** Record a row of the table and assert its budgets (soft: every failing budget of the operation is reported). */
export function judge(operation: string, returned: number | string, cost: Cost, budget: { read: number; written: number; label?: string }): void {
  const ok = cost.rowsRead <= budget.read && cost.rowsWritten <= budget.written;
  table.push({ operation, returned, read: cost.rowsRead, written: cost.rowsWritten, budget: budget.label ?? `r≤${budget.read} w≤${budget.written}`, ok });
  const why = `${operation}: read ${cost.rowsRead} (≤ ${budget.read}), written ${cost.rowsWritten} (≤ ${budget.written}); costliest statements:\n${costliest(cost)}`;
  expect.soft(cost.rowsRead, why).toBeLessThanOrEqual(budget.read);
  expect.soft(cost.rowsWritten, why).toBeLessThanOrEqual(budget.written);
}

export const readBudget = (returned: number) => ({ read: 3 * (returned + 10), written: 0 });
export const returnedBy = (body: unknown) => (Array.isArray(body) ? body.length : typeof body === "object" && body !== null ? 1 : 0);
/**
 * One dispatch run on the metered database. Its ranges wait for their members (`rangeMs` 60 s) unless told otherwise, so the floor measured
 * does not depend on how busy the machine is; a member that outlives its range's wait costs its own claim and release (docs/webhooks.md#design).
 */
export const dispatch = (options: { interest?: SubscribedTypes; poll?: boolean; rangeMs?: number } = {}) =>
  dispatchDue(db.meter.database(), { config, now: () => NOW, fetch: (input, init) => fetch(input, init), random: () => 0.5, rangeMs: 60_000, ...options });
/** Rows a DELETE statement removed: its affected rows, or its rows written when a cascade removed more. */
export const deletedBy = (s: { sql: string; affectedRows: number; rowsWritten: number }) =>
  /\bdelete\s+from\b/i.test(s.sql) ? Math.max(s.affectedRows, s.rowsWritten) : 0;

/** Register the file's set-up (dataset, keys, fixtures, a warm app) and, after it, the printed table. */
export function useCostSuite(): void {
  beforeAll(async () => {
    const started = Date.now();
    receiver = await Receiver.start();
    db = await startCostDatabase({ scale: SCALE, now: NOW, hookUrl: (id) => receiver.url(`/hook/${id}`) });
    console.log(`dataset at scale ${SCALE}: ${JSON.stringify(await db.counts())} in ${Date.now() - started} ms`);
    const recently = new Date(NOW.getTime() - 30_000);
    keys.staff = await db.addKey(1, recently);
    keys.customer = await db.addKey(2, recently);
    const [stockA, stockB, stockC] = (await db.raw.execute("SELECT pet_id FROM inventory WHERE quantity = 5 ORDER BY pet_id LIMIT 3")).rows.map((r) =>
      Number(r[0]),
    );
    Object.assign(ids, { category: 7, pet: 777, order: 12_345, stockA, stockB, stockC, recentEvent: SIZE.events - 50 });
    ids.orderPet = await db.scalar("SELECT pet_id FROM orders WHERE id = 12345");
    ids.openOrderPet = await db.scalar("SELECT pet_id FROM orders WHERE complete = 0 ORDER BY id LIMIT 1");
    ids.customerOrder = await db.scalar("SELECT max(id) FROM orders WHERE account_id = 2");
    ids.customerPet = await db.scalar(`SELECT pet_id FROM orders WHERE id = ${ids.customerOrder}`);
    warm = newApp();
    for (const who of ["staff", "customer"] as const) expect((await send(warm, "GET", "/accounts/me", who)).status).toBe(200); // key cache warmed
  }, 120_000);

  afterAll(async () => {
    console.log(`\nDatabase cost at scale ${SCALE} (rows as sqld counts them):\n${formatCostTable(table)}`);
    await db?.stop();
    await receiver?.close();
  });
}
