/**
 * The Worker's log lines under workerd (docs/operations.md#logs, #traces): every line carries the trace id of its invocation (the
 * runtime's, as Workers Logs and the exported traces show it), and the webhook dispatch and retention runs of the Cron Triggers write
 * their outcomes as fields. A Worker of this file's own, whose lines the test reads as workerd writes them; waits are for lines, never
 * for a fixed time. Its spans cannot be read back locally: test/runtime/workers-tracing.test.ts checks them through the same API.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, uniqueName, type ApiClient } from "../support/client";
import { Receiver } from "../support/webhook-receiver";
import { ownWorkerTarget, type WorkerTarget } from "../support/worker-target";
import { subscribe } from "../scenarios/webhooks.scenarios";

type Line = Record<string, unknown> & { msg: string; traceId?: string; spanId?: string };
const lines: Line[] = [];
let target: WorkerTarget;
let api: ApiClient;
let receiver: Receiver;
beforeAll(async () => {
  const onLog = (text: string) => {
    for (const part of text.split("\n").filter((l) => l.startsWith("{"))) lines.push(JSON.parse(part) as Line);
  };
  target = await ownWorkerTarget({ LOG_LEVEL: "info" }, { onLog });
  api = await connect(target);
  receiver = await Receiver.start();
});
afterAll(async () => {
  await receiver?.close();
  await target?.close();
});

/** The first line `match` accepts, once the Worker has written it (polled every 20 ms, 10 s at most). */
async function lineWhere(match: (line: Line) => boolean): Promise<Line> {
  for (const deadline = Date.now() + 10_000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 20))) {
    const found = lines.find(match);
    if (found) return found;
  }
  throw new Error(`no such line among ${lines.length}: ${JSON.stringify(lines.slice(-5))}`);
}

const TRACE_ID = /^[0-9a-f]{32}$/;
const SPAN_ID = /^[0-9a-f]{16}$/;

describe("the Worker's log lines", () => {
  it("name the trace and span of their request, one trace per request", async () => {
    // Keyed: a public answer marked for the edge cache loses its X-Request-Id.
    const first = await api.get("/pets/987654321", { key: target.staffKey });
    const second = await api.get("/webhooks", { key: target.staffKey });
    const [a, b] = await Promise.all([first, second].map((res) => lineWhere((l) => l.msg === "request" && l.requestId === res.headers.get("x-request-id"))));
    expect(a).toMatchObject({ route: "/pets/:petId", status: 404, traceId: expect.stringMatching(TRACE_ID), spanId: expect.stringMatching(SPAN_ID) });
    expect(b!.traceId).toMatch(TRACE_ID);
    expect(b!.traceId).not.toBe(a!.traceId);
  });

  it("the dispatch Cron Trigger's run logs what it delivered, with its trace", async () => {
    const hook = await subscribe(api, target.staffKey, receiver.url("/telemetry"), ["category.created"]);
    // Committed behind the API's back, so that no request's waitUntil delivers it first.
    await target.db.execute({
      sql: "INSERT INTO events (type, occurred_at, data) VALUES ('category.created', ?, ?)",
      args: [new Date().toISOString(), JSON.stringify({ id: 876543210, name: "Traced" })],
    });
    await (await fetch(`${target.url}/__scheduled?cron=*+*+*+*+*`)).body?.cancel();
    await receiver.waitFor("/telemetry", 1);
    const run = await lineWhere((l) => l.msg === "webhook dispatch" && Number(l.delivered) >= 1);
    expect(run).toMatchObject({ level: "info", attempted: expect.any(Number), retried: 0, givenUp: 0, traceId: expect.stringMatching(TRACE_ID) });
    expect((await api.delete(`/webhooks/${hook.id}`, { key: target.staffKey })).status).toBe(204);
  });

  it("a write's dispatch in its waitUntil logs under the write's trace", async () => {
    const hook = await subscribe(api, target.staffKey, receiver.url("/telemetry-write"), ["category.created"]);
    const res = await api.post("/categories", { name: uniqueName("Traced") }, { key: target.staffKey });
    expect(res.status).toBe(201);
    await receiver.waitFor("/telemetry-write", 1);
    const request = await lineWhere((l) => l.msg === "request" && l.requestId === res.headers.get("x-request-id"));
    await lineWhere((l) => l.msg === "webhook dispatch" && l.traceId === request.traceId && Number(l.delivered) >= 1);
    expect((await api.delete(`/webhooks/${hook.id}`, { key: target.staffKey })).status).toBe(204);
  });

  it("a write's run gives the oldest age of the subscriptions it served; the dispatch Cron Trigger's counts every backlog, a paused one's too", async () => {
    const key = target.staffKey;
    const paused = await subscribe(api, key, receiver.url("/telemetry-paused"), ["category.created"]);
    expect((await api.patch(`/webhooks/${paused.id}`, { enabled: false }, { key })).status).toBe(200);
    const served = await subscribe(api, key, receiver.url("/telemetry-served"), ["category.created"]);
    expect((await api.post("/categories", { name: uniqueName("Counted") }, { key })).status).toBe(201);
    await receiver.waitFor("/telemetry-served", 1);
    const of = (l: Line, id: number) => (l.subscriptions as { id: number }[] | undefined)?.find((s) => s.id === id);
    const run = await lineWhere((l) => l.msg === "webhook dispatch" && of(l, served.id) !== undefined);
    expect(of(run, served.id)).toEqual({ id: served.id, enabled: true, delivered: 1, failed: 0, givenUp: 0, oldestAgeSeconds: 0 });
    expect(of(run, paused.id)).toBeUndefined();
    await (await fetch(`${target.url}/__scheduled?cron=*+*+*+*+*`)).body?.cancel();
    const census = await lineWhere((l) => l.msg === "webhook dispatch" && of(l, paused.id) !== undefined);
    expect(of(census, paused.id)).toMatchObject({ backlog: 1, oldestAgeSeconds: expect.any(Number) });
    expect(of(census, served.id)).toMatchObject({ backlog: 0, oldestAgeSeconds: 0 });
    for (const hook of [paused, served]) expect((await api.delete(`/webhooks/${hook.id}`, { key })).status).toBe(204);
  });

  it("the retention Cron Trigger's run logs the rows it deleted, by kind, with its trace", async () => {
    await (await fetch(`${target.url}/__scheduled?cron=0+*+*+*+*`)).body?.cancel();
    const run = await lineWhere((l) => l.msg === "retention");
    expect(run).toMatchObject({
      level: "info",
      events: expect.any(Number),
      keys: expect.any(Number),
      idempotency: expect.any(Number),
      deliveries: expect.any(Number),
      rounds: expect.any(Number),
      traceId: expect.stringMatching(TRACE_ID),
    });
  });
});
