/**
 * Webhook attempts in traces (docs/operations.md#traces): on the real server with OTLP on, each attempt is a client span
 * that names its subscription, event and `webhook-id` and links to the trace of the write that committed the event, and the
 * delivery carries its context as W3C `traceparent`, so a receiver's own trace joins it.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { OtlpReceiver } from "../support/otlp-receiver";
import { call, type ServerProcess, startServer } from "../support/server-process";
import { Receiver, verified } from "../support/webhook-receiver";

let dir: string;
let server: ServerProcess;
let hooks: Receiver;
const otlp = new OtlpReceiver();

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "petstore-webhook-traces-"));
  hooks = await Receiver.start();
  const endpoint = await otlp.start();
  server = await startServer({
    databaseUrl: `file:${join(dir, "petstore.db")}`,
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json", OTEL_BSP_SCHEDULE_DELAY: "50", WEBHOOKS_ALLOW_PRIVATE: "true" },
  });
});

afterAll(async () => {
  if (server && !server.exited()) expect(await server.stop()).toBe(0);
  await otlp.stop();
  await hooks?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

it("an attempt: a client span with the subscription, event and webhook-id, whose context the delivery carries as traceparent", async () => {
  const key = server.bootstrapKey!;
  const hook = await call(server.url, "POST", "/webhooks", { url: hooks.url("/traced"), events: ["category.created"] }, { key });
  expect(hook.status).toBe(201);
  const { id: webhookId, secret } = hook.body as { id: number; secret: string };
  const write = await call(server.url, "POST", "/categories", { name: "Traced hook", description: "x" }, { key });
  expect(write.status).toBe(201);
  await hooks.waitFor("/traced", 1);
  const [delivery] = hooks.at("/traced");
  const event = verified(delivery!, secret);
  const traceparent = delivery!.headers.traceparent;
  expect(traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
  const [, traceId, spanId] = traceparent!.split("-");
  const span = await otlp.waitFor((spans) => spans.find((s) => s.name === "petstore.webhook.attempt" && s.spanId === spanId));
  expect(span.traceId).toBe(traceId);
  expect(span.kind).toBe(3);
  expect(span.attributes).toMatchObject({
    "petstore.webhook.id": webhookId,
    "petstore.event.id": event.id,
    "petstore.webhook.message_id": `evt_${event.id}`,
    "http.response.status_code": 204,
  });
  // A span link to the request span of the write that committed the event: the trace the attempt does not belong to.
  const request = await otlp.waitFor((spans) =>
    spans.find((s) => s.kind === 2 && s.attributes["http.response.header.x-request-id"] === write.headers.get("x-request-id")),
  );
  expect(request.traceId).not.toBe(traceId);
  expect(span.links).toEqual([{ traceId: request.traceId, spanId: request.spanId }]);
});
