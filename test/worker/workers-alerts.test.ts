/**
 * The Worker's alerts (docs/monitoring/workers-alerts.json, docs/runbook.md#alerts-on-workers) evaluated by scripts/workers-alerts.ts
 * on the lines a real local Worker writes: each fires under its scripted fault and stays quiet without it. Faults: a 5xx burst (a Worker
 * whose database does not answer), a failing subscriber (a receiver answering 500, with WEBHOOK_MAX_ATTEMPTS=2), an event left
 * undelivered for 10 minutes, and a slow database (a proxy of the test's that holds each answer 30 ms). Waits are for lines or
 * deliveries, never for a fixed time.
 */
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { evaluateWorkersAlerts, type Firing, loadWorkersAlerts } from "../../scripts/workers-alerts";
import { type ApiClient, connect } from "../support/client";
import { Receiver } from "../support/webhook-receiver";
import { ownWorkerTarget, type WorkerTarget } from "../support/worker-target";
import { subscribe } from "../scenarios/webhooks.scenarios";

type Line = Record<string, unknown> & { msg: string };
const ALERTS = loadWorkersAlerts();

interface LoggedWorker {
  target: WorkerTarget;
  /** A client (which checks GET /health first), unless the database is down on purpose. */
  api: ApiClient;
  lines: Line[];
}

/** A Worker of this file's own with `vars`, and the JSON lines it writes; `databaseUrl` down: no client. */
async function loggedWorker(vars: Record<string, string>, options: { databaseUrl?: string; down?: boolean } = {}): Promise<LoggedWorker> {
  const lines: Line[] = [];
  const onLog = (text: string) => {
    for (const part of text.split("\n").filter((l) => l.startsWith("{"))) lines.push(JSON.parse(part) as Line);
  };
  const target = await ownWorkerTarget({ LOG_LEVEL: "info", ...vars }, { onLog, databaseUrl: options.databaseUrl });
  return { target, api: options.down ? (undefined as never) : await connect(target), lines };
}

/** Until `lines` holds one `match` accepts (polled every 20 ms, 20 s at most). */
async function lineWhere(lines: Line[], match: (line: Line) => boolean): Promise<Line> {
  for (const deadline = Date.now() + 20_000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 20))) {
    const found = lines.find(match);
    if (found) return found;
  }
  throw new Error(`no such line among ${lines.length}: ${JSON.stringify(lines.slice(-5))}`);
}

/** The names (and group) of the alerts that fire now over `lines`. */
const firing = (lines: Line[]) => evaluateWorkersAlerts(ALERTS, lines, Date.now()).map((f: Firing) => [f.alert, f.labels.id ?? ""].join(" ").trim());

/** A database in front of the run's sqld whose faults the test sets: answers held `delayMs`, or `down` (every connection reset). */
interface FaultyDatabase {
  url: string;
  delayMs: number;
  down: boolean;
  close(): Promise<void>;
}

/** Start a FaultyDatabase: an HTTP proxy to sqld, healthy until told otherwise. */
async function faultyDatabase(): Promise<FaultyDatabase> {
  const { hostname, port } = new URL(inject("petstoreWorker").databaseUrl);
  const proxy: Server = createServer((req, res) => {
    if (database.down) return void req.socket.destroy();
    const upstream = request({ hostname, port, path: req.url, method: req.method, headers: req.headers }, (answer) => {
      const chunks: Buffer[] = [];
      answer.on("data", (chunk: Buffer) => chunks.push(chunk));
      const answerNow = () => res.writeHead(answer.statusCode ?? 502, answer.headers).end(Buffer.concat(chunks));
      answer.on("end", () => (database.delayMs > 0 ? setTimeout(answerNow, database.delayMs) : answerNow()));
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  const database: FaultyDatabase = {
    url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    delayMs: 0,
    down: false,
    close: () => new Promise((resolve) => proxy.close(() => resolve())),
  };
  return database;
}

/** A Worker on a database proxy whose faults the file's tests set, started before them and stopped after (the proxy healthy again). */
function useWorkerOnFaultyDatabase(): { database: FaultyDatabase; worker: LoggedWorker } {
  const rig = {} as { database: FaultyDatabase; worker: LoggedWorker };
  beforeAll(async () => {
    rig.database = await faultyDatabase();
    rig.worker = await loggedWorker({}, { databaseUrl: rig.database.url });
  }, 60_000);
  afterAll(async () => {
    if (rig.database) rig.database.down = false;
    await rig.worker?.target.close();
    await rig.database?.close();
  });
  return rig;
}

describe("a 5xx burst: the database goes down", () => {
  const rig = useWorkerOnFaultyDatabase();

  it("before: a client's unknown methods and 4xx beside reads stay quiet", async () => {
    for (let i = 0; i < 5; i++) {
      expect((await rig.worker.target.fetch("/pets", { method: "PROPFIND" })).status).toBe(501);
      expect((await rig.worker.api.get("/pets/987654321", { key: rig.worker.target.staffKey })).status).toBe(404);
      expect((await rig.worker.target.fetch("/health")).status).toBe(200);
    }
    await lineWhere(rig.worker.lines, (l) => l.msg === "request" && l.status === 501);
    expect(firing(rig.worker.lines)).not.toContain("PetstoreErrorRate");
  });

  it("then: the requests the Worker fails fire PetstoreErrorRate", async () => {
    rig.database.down = true;
    for (let i = 0; i < 5; i++) expect((await rig.worker.target.fetch("/health")).status).toBe(503);
    await lineWhere(rig.worker.lines, (l) => l.msg === "request" && l.level === "error");
    expect(firing(rig.worker.lines)).toContain("PetstoreErrorRate");
  });
});

describe("webhooks: a failing subscriber", () => {
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await Receiver.start();
    receiver.on("/failing", () => 500);
  });
  afterAll(async () => receiver?.close());

  /** Subscribe `path` of the receiver on `worker`; commit an event `ageMs` old behind the API's back (no request delivers it first); run a dispatch. */
  async function deliver(worker: LoggedWorker, path: string, ageMs: number) {
    const hook = await subscribe(worker.api, worker.target.staffKey, receiver.url(path), ["category.created"]);
    await worker.target.db.execute({
      sql: "INSERT INTO events (type, occurred_at, data) VALUES ('category.created', ?, ?)",
      args: [new Date(Date.now() - ageMs).toISOString(), JSON.stringify({ id: 876543210, name: "Alerted" })],
    });
    await (await fetch(`${worker.target.url}/__scheduled?cron=*+*+*+*+*`)).body?.cancel();
    await receiver.waitFor(path, 1);
    const of = (l: Line) => ((l.subscriptions as { id: number; backlog: number; givenUp: number }[] | undefined) ?? []).find((one) => one.id === hook.id);
    const line = of(await lineWhere(worker.lines, (l) => l.msg === "webhook dispatch" && of(l) !== undefined))!;
    return { hook, line, remove: async () => expect((await worker.api.delete(`/webhooks/${hook.id}`, { key: worker.target.staffKey })).status).toBe(204) };
  }

  describe("retried after 30 s (the default)", () => {
    let worker: LoggedWorker;
    beforeAll(async () => {
      worker = await loggedWorker({});
    }, 60_000);
    afterAll(async () => worker?.target.close());

    it("a healthy subscriber with a fresh event: neither webhook alert fires", async () => {
      const { remove } = await deliver(worker, "/healthy", 0);
      expect(firing(worker.lines).filter((name) => name.startsWith("PetstoreWebhook"))).toEqual([]);
      await remove();
    });

    it("a failing subscriber's event 10 minutes old, still to be retried: PetstoreWebhookBacklogAge fires for it, no give-up", async () => {
      const { hook, line, remove } = await deliver(worker, "/failing", 600_000);
      expect(line).toMatchObject({ backlog: 1, givenUp: 0 });
      expect(firing(worker.lines)).toContain(`PetstoreWebhookBacklogAge ${hook.id}`);
      expect(firing(worker.lines)).not.toContain(`PetstoreWebhooksGivingUp ${hook.id}`);
      await remove();
    });
  });

  describe("two attempts, retried at once", () => {
    let worker: LoggedWorker;
    beforeAll(async () => {
      worker = await loggedWorker({ WEBHOOK_MAX_ATTEMPTS: "2", WEBHOOK_RETRY_BASE_MS: "1" });
    }, 60_000);
    afterAll(async () => worker?.target.close());

    it("a failing subscriber's deliveries given up fire PetstoreWebhooksGivingUp for it", async () => {
      const { hook, line, remove } = await deliver(worker, "/failing", 0);
      expect(line.givenUp).toBeGreaterThan(0);
      expect(firing(worker.lines)).toContain(`PetstoreWebhooksGivingUp ${hook.id}`);
      await remove();
    });
  });
});

describe("a slow database", () => {
  const rig = useWorkerOnFaultyDatabase();

  it("reads and writes slower than their objectives fire both latency alerts, and no error alert", async () => {
    rig.database.delayMs = 30;
    for (let i = 0; i < 3; i++) {
      expect((await rig.worker.api.get("/pets/987654321", { key: rig.worker.target.staffKey })).status).toBe(404);
      expect((await rig.worker.api.post("/categories", { name: `Slow ${Date.now()} ${i}` }, { key: rig.worker.target.staffKey })).status).toBe(201);
    }
    await lineWhere(rig.worker.lines, (l) => l.msg === "request" && l.method === "POST");
    expect(firing(rig.worker.lines)).toEqual(expect.arrayContaining(["PetstoreReadLatencyBudgetBurn", "PetstoreWriteLatencyBudgetBurn"]));
    expect(firing(rig.worker.lines)).not.toContain("PetstoreErrorRate");
  });
});
