/**
 * The Worker's spans through the API every layer calls (src/runtime/workers/tracing.ts): a runtime `tracing` of the test, which keeps
 * its active span in AsyncLocalStorage as workerd keeps it in its async context, behind the app with the Worker's request span and
 * traced database (a libSQL file). The request span is the invocation's own, named by route template; each database round trip is a
 * child with Node's `db.*` attributes; the retention run and the log line name the same trace. Under workerd the spans go to
 * Cloudflare, which a local run cannot read back (docs/operations.md#traces); test/worker/telemetry.test.ts checks the Worker's lines.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { parseConfig } from "../../src/config";
import { tracedDatabase } from "../../src/db/traced";
import { jsonLogger } from "../../src/logger";
import { requestSpan } from "../../src/runtime/request-span";
import { registerWorkersTracing, type RuntimeSpan, type RuntimeTracing } from "../../src/runtime/workers/tracing";
import { pruneExpired } from "../../src/services/retention";
import { attempt } from "../../src/services/webhooks/delivery";
import { withTraceFields } from "../../src/logger";
import { openTestDatabase, type TestDatabase } from "../support/database";
import { TEST_ENV } from "../support/node-target";
import { createStaffKeyFor } from "../support/staff-key";

/** A span as the runtime would record it. */
class RecordedSpan implements RuntimeSpan {
  static next = 0;
  readonly spanId = (++RecordedSpan.next).toString(16).padStart(16, "0");
  readonly attributes: Record<string, unknown> = {};
  status = "unset";
  ended = false;
  constructor(
    public name: string,
    readonly traceId: string,
    readonly parent?: RecordedSpan,
  ) {}
  spanContext = () => ({ traceId: this.traceId, spanId: this.spanId, traceFlags: 1 });
  setAttributes = (attributes: Record<string, unknown>) => Object.assign(this.attributes, attributes);
  setStatus = ({ code }: { code: string }) => (this.status = code);
  recordException = () => {};
  updateName = (name: string) => (this.name = name);
  end = () => (this.ended = true);
}

const active = new AsyncLocalStorage<RecordedSpan>();
const spans: RecordedSpan[] = [];
const runtime: RuntimeTracing = {
  startActiveSpan: (name, callback) => {
    const parent = active.getStore();
    const span = new RecordedSpan(name, parent?.traceId ?? "0".repeat(32), parent);
    spans.push(span);
    return active.run(span, () => callback(span));
  },
  getActiveSpan: () => active.getStore(),
  withActiveSpan: (span, callback) => active.run(span as RecordedSpan, callback),
};

/** Run `fn` as one invocation: its root span (the runtime's `fetch` or `scheduled`) active throughout. */
function invocation<T>(traceId: string, fn: () => Promise<T>): { root: RecordedSpan; done: Promise<T> } {
  const root = new RecordedSpan("fetch", traceId);
  spans.push(root);
  return { root, done: active.run(root, fn) };
}

let dir: string;
let db: TestDatabase;
let staffKey: string;
const lines: Record<string, unknown>[] = [];
let app: ReturnType<typeof createApp>;
beforeAll(async () => {
  registerWorkersTracing(runtime);
  dir = mkdtempSync(join(tmpdir(), "petstore-workers-tracing-"));
  db = await openTestDatabase(`file:${join(dir, "test.db")}`);
  staffKey = await createStaffKeyFor(db);
  const config = parseConfig({ ...TEST_ENV, LOG_LEVEL: "info" });
  const logger = withTraceFields(jsonLogger("info", (line) => lines.push(JSON.parse(line))));
  app = createApp({ db: () => tracedDatabase(db), config, logger, telemetry: { middleware: [requestSpan()] } });
});
afterAll(async () => {
  await db?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("Workers spans through the OpenTelemetry API", () => {
  it("the invocation's span is named by route template, with one child per database round trip carrying Node's db attributes", async () => {
    const { root, done } = invocation("a".repeat(32), async () => app.request("http://localhost/pets/987654321"));
    const res = await done;
    expect(res.status).toBe(404);
    expect(root).toMatchObject({ name: "GET /pets/:petId", status: "unset", ended: false });
    expect(root.attributes).toMatchObject({ "http.route": "/pets/:petId", "http.response.status_code": 404, "url.path": "/pets/987654321" });
    const children = spans.filter((s) => s.parent === root);
    expect(children.map((s) => s.name)).toEqual(["SELECT pets"]);
    expect(children[0]).toMatchObject({ ended: true, traceId: root.traceId });
    expect(children[0]!.attributes).toMatchObject({
      "db.system.name": "sqlite",
      "db.operation.name": "SELECT",
      "db.collection.name": "pets",
      "db.query.summary": "SELECT pets",
    });
    const line = lines.find((l) => l.msg === "request" && l.requestId === res.headers.get("x-request-id"));
    expect(line).toMatchObject({ traceId: root.traceId, spanId: root.spanId });
  });

  it("a write's batch is a child span named by its plan's steps", async () => {
    const body = JSON.stringify({ name: "Traced" });
    const headers = { Authorization: `Bearer ${staffKey}`, "Content-Type": "application/json" };
    const { root, done } = invocation("b".repeat(32), async () => app.request("http://localhost/categories", { method: "POST", headers, body }));
    expect((await done).status).toBe(201);
    expect(root.name).toBe("POST /categories");
    const batch = spans.find((s) => s.parent === root && s.attributes["db.operation.name"] === "BATCH");
    expect(batch?.attributes).toMatchObject({ "petstore.db.transaction": "write", "db.query.summary": batch?.name });
  });

  it("a write stores its trace with its event, and a webhook attempt's request carries the attempt's span as traceparent", async () => {
    const body = JSON.stringify({ name: "Traced event" });
    const headers = { Authorization: `Bearer ${staffKey}`, "Content-Type": "application/json" };
    const write = invocation("d".repeat(32), async () => app.request("http://localhost/categories", { method: "POST", headers, body }));
    const { id } = (await (await write.done).json()) as { id: number };
    const { rows } = await db.execute({ sql: "SELECT traceparent FROM events WHERE type = 'category.created' AND json_extract(data, '$.id') = ?", args: [id] });
    expect(rows[0]?.traceparent).toBe(`00-${"d".repeat(32)}-${write.root.spanId}-01`);

    const sent: Headers[] = [];
    const fetch = async (_url: string, init: RequestInit) => {
      sent.push(new Headers(init.headers));
      return new Response(null, { status: 204 });
    };
    const message = { eventId: 1, eventType: "category.created", messageId: "evt_1", body: "{}", traceparent: String(rows[0]!.traceparent) };
    const target = { webhookId: 1, url: "http://127.0.0.1:9/hook", secrets: [`whsec_${btoa("k".repeat(24))}`] };
    const config = parseConfig({ ...TEST_ENV, WEBHOOKS_ALLOW_PRIVATE: "true" });
    const cron = invocation("e".repeat(32), () => attempt(target, message, { config, at: new Date(), fetch }));
    expect((await cron.done).ok).toBe(true);
    const span = spans.find((s) => s.parent === cron.root && s.name === "petstore.webhook.attempt");
    expect(sent[0]!.get("traceparent")).toBe(`00-${"e".repeat(32)}-${span!.spanId}-01`);
  });

  it("a retention run is a span of the cron invocation, its round trips inside", async () => {
    const { root, done } = invocation("c".repeat(32), () => pruneExpired(tracedDatabase(db), 30, new Date()));
    await done;
    const [run] = spans.filter((s) => s.parent === root);
    expect(run).toMatchObject({ name: "petstore.retention.run", ended: true });
    expect(run!.attributes).toMatchObject({ "petstore.retention.rounds": 1, "petstore.retention.deleted.events": 0 });
    expect(spans.filter((s) => s.parent === run).length).toBeGreaterThan(0);
  });
});
