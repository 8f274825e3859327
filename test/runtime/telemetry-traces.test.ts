/**
 * Traces on Node (docs/operations.md#traces), on both OTLP/HTTP encodings: the real server with OTEL_EXPORTER_OTLP_ENDPOINT pointing at
 * an OTLP receiver of the test sends a request span named by its route template, by the HTTP server conventions (4xx Unset, 5xx Error
 * with `error.type`, `url.path` without the query string), carrying the request id, with one client child span per database round trip
 * named by operation and table, and the request's log line names its trace.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { version } from "../../package.json";
import { OtlpReceiver, type ReceivedSpan } from "../support/otlp-receiver";
import { call, type ServerProcess, startServer } from "../support/server-process";

describe.each(["http/json", "http/protobuf"])("over %s", (protocol) => {
  let dir: string;
  let server: ServerProcess;
  const receiver = new OtlpReceiver();

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "petstore-traces-"));
    const endpoint = await receiver.start();
    server = await startServer({
      databaseUrl: `file:${join(dir, "petstore.db")}`,
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
        OTEL_SERVICE_NAME: "petstore-under-test",
        OTEL_BSP_SCHEDULE_DELAY: "50",
        WEBHOOK_POLL_MS: "100",
      },
    });
  });

  afterAll(async () => {
    if (server && !server.exited()) await server.stop();
    await receiver.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** The request log line of `requestId`, parsed. */
  async function logLine(requestId: string): Promise<{ traceId?: string; spanId?: string; sampled?: boolean; dbRoundTrips: number }> {
    const line = await server.line(new RegExp(`"requestId":"${requestId}"`));
    return JSON.parse(line.slice(line.indexOf("{")));
  }

  /** The server span whose X-Request-Id attribute is `requestId`, and its children. */
  async function requestTrace(requestId: string): Promise<{ span: ReceivedSpan; children: ReceivedSpan[] }> {
    return receiver.waitFor((spans) => {
      const span = spans.find((s) => s.kind === 2 && s.attributes["http.response.header.x-request-id"] === requestId);
      return span && { span, children: spans.filter((s) => s.parentSpanId === span.spanId) };
    });
  }

  /** `res`'s status checked; its log line, its request span and that span's children. */
  async function answered(res: { status: number; headers: Headers }, status: number) {
    expect(res.status).toBe(status);
    const requestId = res.headers.get("x-request-id")!;
    return { line: await logLine(requestId), ...(await requestTrace(requestId)) };
  }

  it("a read: a span named by its route template, a client span per round trip, its trace id in the log line", async () => {
    const { line, span, children } = await answered(await call(server.url, "GET", "/pets/987654"), 404);

    expect(span.name).toBe("GET /pets/:petId");
    expect(span.attributes["http.route"]).toBe("/pets/:petId");
    expect(span.attributes["http.request.method"]).toBe("GET");
    expect(span.attributes["http.response.status_code"]).toBe(404);
    expect(span.resource["service.name"]).toBe("petstore-under-test");
    expect(span.resource["service.version"]).toBe(version);
    expect([line.traceId, line.spanId, line.sampled]).toEqual([span.traceId, span.spanId, true]);
    expect(line.dbRoundTrips).toBeGreaterThan(0);
    expect(children).toHaveLength(line.dbRoundTrips);
    for (const child of children) {
      expect(child.kind).toBe(3);
      expect(child.traceId).toBe(span.traceId);
      expect(child.attributes["db.system.name"]).toBe("sqlite");
      // One statement: named by its operation and table.
      expect(child.name).toMatch(/^SELECT \w+$/);
      expect(child.attributes["db.query.summary"]).toBe(child.name);
    }
    if (protocol === "http/protobuf") expect(receiver.protobufPosts).toBeGreaterThan(0);
  });

  it("a client's mistake stays Unset with no exception event; the required attributes are there, the query string is not", async () => {
    const res = await call(server.url, "GET", "/pets?limit=2&status=secret-token", undefined, { headers: { "User-Agent": "otel-test/1" } });
    expect(res.status).toBe(400);
    const { span } = await requestTrace(res.headers.get("x-request-id")!);
    expect(span.status).toBe(0);
    expect(span.events).toEqual([]);
    expect(span.attributes).toMatchObject({
      "url.path": "/pets",
      "url.scheme": "http",
      "server.address": "127.0.0.1",
      "client.address": "127.0.0.1",
      "user_agent.original": "otel-test/1",
    });
    expect(JSON.stringify(span.attributes)).not.toContain("secret-token");
  });

  it("a write: its batch's span names the plan's steps, the transaction and the statement count", async () => {
    const res = await call(server.url, "POST", "/categories", { name: "Traced", description: "a category" }, { key: server.bootstrapKey });
    const { line, span, children } = await answered(res, 201);

    expect(span.name).toBe("POST /categories");
    expect(span.attributes["http.route"]).toBe("/categories");
    expect(children).toHaveLength(line.dbRoundTrips);
    const write = children.find((s) => s.attributes["petstore.db.transaction"] === "write");
    expect(write?.attributes["db.operation.name"]).toBe("BATCH");
    expect(write?.attributes["db.operation.batch.size"]).toBeGreaterThan(1);
    expect(write?.name).toBe(write?.attributes["db.query.summary"]);
  });

  it("a request refused by a middleware still carries its route template, and stays Unset", async () => {
    const res = await call(server.url, "POST", "/categories", { name: "Refused" }, { key: "psk_not-a-real-key" });
    expect(res.status).toBe(401);
    const { span } = await requestTrace(res.headers.get("x-request-id")!);
    expect(span.name).toBe("POST /categories");
    expect(span.attributes["http.route"]).toBe("/categories");
    expect([span.status, span.events]).toEqual([0, []]);
  });

  it("an unknown method (501) is the client's doing: Unset, with no error.type", async () => {
    const res = await fetch(`${server.url}/pets`, { method: "PROPFIND" });
    expect(res.status).toBe(501);
    const { span } = await requestTrace(res.headers.get("x-request-id")!);
    expect([span.status, span.attributes["error.type"], span.attributes["http.request.method_original"]]).toEqual([0, undefined, "PROPFIND"]);
  });

  it("idle webhook polls (every 100 ms since the start) and the start-up make no root trace of their own", () => {
    // Retention's run at the start is a trace of its own (internal); a lone round trip is not.
    const roots = receiver.spans.filter((s) => s.parentSpanId === "" && s.kind === 3);
    expect(roots.map((s) => s.name)).toEqual([]);
  });

  it("a server failure is Error with error.type, and its error line names the trace (last: it removes the database file)", async () => {
    rmSync(join(dir, "petstore.db"));
    const res = await call(server.url, "GET", "/health");
    expect(res.status).toBe(503);
    const requestId = res.headers.get("x-request-id")!;
    const { span } = await requestTrace(requestId);
    expect(span.status).toBe(2);
    expect(span.attributes["error.type"]).toEqual(expect.any(String));
    const error = await server.line(new RegExp(`"msg":"unexpected error".*"requestId":"${requestId}"|"requestId":"${requestId}".*"msg":"unexpected error"`));
    expect(JSON.parse(error.slice(error.indexOf("{"))).traceId).toBe(span.traceId);
  });
});
