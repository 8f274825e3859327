/**
 * Orders under load on the Worker while the database is busy (issue 47, item 8): a
 * Worker of its own reaches the run's sqld through a proxy that answers every
 * {@link BUSY_EVERY}th write batch with SQLITE_BUSY on its `BEGIN IMMEDIATE`, as a
 * sqld whose write lock is held answers (seen under this load: 503 "SQLITE_BUSY:
 * database is locked" after one round trip). Such a batch ran nothing, so the Worker
 * sends it again within its lock wait: POST /store/orders from 20 connections for 6 s
 * on a pet with 1,000,000 in stock answers 201 every time, and the database holds
 * exactly one order, and one unit taken, per 201 (a retried batch is applied once).
 */
import { createServer, type Server } from "node:http";
import { Agent, fetch as undiciFetch } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { ownWorkerTarget, type WorkerTarget } from "../support/worker-target";

/** Every this many write batches, one is answered SQLITE_BUSY instead of reaching sqld. */
const BUSY_EVERY = 5;
const CONNECTIONS = 20;
const DURATION_MS = 6_000;
const STOCK = 1_000_000;

interface PipelineRequest {
  type: string;
  batch?: { steps: { stmt?: { sql?: string } }[] };
}

/** sqld's answer to a pipeline whose batch found the write lock held: its first step failed, no other step ran. */
function busyAnswer(requests: PipelineRequest[]): string {
  const results = requests.map((request) => {
    if (request.type !== "batch") return { type: "ok", response: { type: request.type } };
    const steps = request.batch!.steps;
    const stepErrors = steps.map((_, i) => (i === 0 ? { message: "SQLite error: database is locked", code: "SQLITE_BUSY" } : null));
    return { type: "ok", response: { type: "batch", result: { step_results: steps.map(() => null), step_errors: stepErrors } } };
  });
  return JSON.stringify({ baton: null, base_url: null, results });
}

/** A proxy to sqld at `upstream` that, once armed, answers every BUSY_EVERY-th write batch (`BEGIN IMMEDIATE`) busy; `busy` counts them. */
async function busyProxy(upstream: string): Promise<{ url: string; arm: () => void; busy: () => number; close: () => Promise<void> }> {
  let armed = false;
  let writes = 0;
  let busy = 0;
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    if (req.method === "POST" && req.url?.endsWith("/pipeline")) {
      const requests = (JSON.parse(body.toString("utf8")) as { requests: PipelineRequest[] }).requests;
      const write = requests.some((r) => r.type === "batch" && r.batch?.steps[0]?.stmt?.sql === "BEGIN IMMEDIATE");
      if (armed && write && ++writes % BUSY_EVERY === 0) {
        busy++;
        res.writeHead(200, { "content-type": "application/json" }).end(busyAnswer(requests));
        return;
      }
    }
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([name]) => !["host", "content-length", "connection"].includes(name))) as Record<
      string,
      string
    >;
    const answer = await fetch(`${upstream}${req.url}`, { method: req.method, headers, body: req.method === "GET" ? undefined : body });
    res.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "application/json" }).end(Buffer.from(await answer.arrayBuffer()));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, arm: () => (armed = true), busy: () => busy, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

let proxy: Awaited<ReturnType<typeof busyProxy>>;
let target: WorkerTarget;
const dispatcher = new Agent({ connections: CONNECTIONS });

beforeAll(async () => {
  proxy = await busyProxy(inject("petstoreWorker").databaseUrl);
  target = await ownWorkerTarget({}, { databaseUrl: proxy.url });
}, 120_000);
afterAll(async () => {
  await target?.close();
  await proxy?.close();
  await dispatcher.close();
});

/** The members of the answers this test reads. */
interface Reply {
  id: number;
  apiKey: { key: string };
}

/** `fetch` to the Worker with a JSON body and a key. */
async function call(method: string, path: string, key: string | undefined, body: unknown): Promise<{ status: number; body: Reply }> {
  const res = await undiciFetch(`${target.url}${path}`, {
    method,
    dispatcher,
    headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json().catch(() => null)) as Reply };
}

describe("POST /store/orders under load while the database answers SQLITE_BUSY", { timeout: 120_000 }, () => {
  it(`20 connections for 6 s, every ${BUSY_EVERY}th write busy: 0 × 5xx, one order and one unit per 201`, async () => {
    const staff = target.staffKey;
    const category = await call("POST", "/categories", staff, { name: `Busy ${crypto.randomUUID()}` });
    const pet = await call("POST", "/pets", staff, { name: "Busy load", categoryId: category.body.id });
    expect((await call("PUT", `/store/inventory/${pet.body.id}`, staff, { quantity: STOCK })).status).toBe(200);
    const account = await call("POST", "/accounts", undefined, { name: "Busy", email: `busy-${crypto.randomUUID()}@example.com` });
    const key = account.body.apiKey.key;
    proxy.arm();

    const statuses = new Map<number, number>();
    const end = Date.now() + DURATION_MS;
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (Date.now() < end) {
          const { status } = await call("POST", "/store/orders", key, { petId: pet.body.id, quantity: 1 });
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
        }
      }),
    );

    const placed = statuses.get(201) ?? 0;
    expect(proxy.busy(), "write batches answered busy during the load").toBeGreaterThan(0);
    expect(Object.fromEntries(statuses), "statuses").toEqual({ 201: placed });
    const rows = await target.db.execute({
      sql: "SELECT (SELECT count(*) FROM orders WHERE pet_id = ?) AS orders, (SELECT quantity FROM inventory WHERE pet_id = ?) AS quantity",
      args: [pet.body.id, pet.body.id],
    });
    expect(Number(rows.rows[0]!.orders)).toBe(placed);
    expect(Number(rows.rows[0]!.quantity)).toBe(STOCK - placed);
  });
});
