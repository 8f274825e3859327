/**
 * Traces and metrics through the OpenTelemetry API, for every layer (docs/operations.md#traces, #metrics). The API does nothing until a
 * runtime registers an SDK (Node: src/runtime/node/telemetry.ts, only when switched on); names follow the OpenTelemetry semantic conventions,
 * the store's own under `petstore.`.
 */
import {
  type Attributes,
  context,
  type Histogram,
  type Meter,
  metrics,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  trace,
} from "@opentelemetry/api";
import type { Logger, RequestLine } from "./logger";

/** The instrumentation scope of every span and instrument of the service. */
export const SCOPE = "petstore";

/** Buckets of the duration histograms, seconds: from 100 µs, as the service answers in tens of µs to a few ms, up to 10 s. */
export const DURATION_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Spans whose duration a histogram records too: span name → instrument of `instruments()`. */
const TIMED_SPANS: Record<string, "webhookAttemptDuration"> = { "petstore.webhook.attempt": "webhookAttemptDuration" };

/** The `error.type` of a thrown value (OpenTelemetry's error attribute): a driver's error code, else the error's class name. */
export function errorType(error: unknown): string {
  return error instanceof Error ? ((error as { code?: unknown }).code?.toString() ?? error.name) : "Error";
}

/**
 * Run `fn` inside an active span `name` (children started in it are its children); the span ends when `fn` settles, with status ERROR,
 * `error.type` and the exception recorded when it throws. Without a registered SDK the span records nothing.
 * @returns what `fn` returns. @throws what `fn` throws.
 */
export function inSpan<T>(name: string, attributes: Attributes, fn: (span: Span) => Promise<T>, kind: SpanKind = SpanKind.INTERNAL): Promise<T> {
  const timed = TIMED_SPANS[name];
  const started = timed && performance.now();
  return trace.getTracer(SCOPE).startActiveSpan(name, { kind, attributes }, async (span) => {
    let failure: string | undefined;
    try {
      return await fn(span);
    } catch (error) {
      failure = errorType(error);
      span.recordException(error instanceof Error ? error : String(error));
      span.setAttribute("error.type", failure);
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw error;
    } finally {
      span.end();
      if (timed) instruments()[timed].record((performance.now() - started!) / 1000, failure ? { "error.type": failure } : {});
    }
  });
}

/** The methods the HTTP conventions name; any other is `_OTHER`. */
const KNOWN_METHODS = new Set(["CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE", "QUERY"]);

/** `method` as the HTTP conventions' `http.request.method`: itself when they name it, else `_OTHER` (bounded label values). */
export function httpMethod(method: string): string {
  return KNOWN_METHODS.has(method) ? method : "_OTHER";
}

/** Middleware counting the requests in flight (`http.server.active_requests`). */
export async function activeRequests(c: { req: { method: string } }, next: () => Promise<void>): Promise<void> {
  const { active } = instruments();
  const attributes = { "http.request.method": httpMethod(c.req.method), "url.scheme": "http" };
  active.add(1, attributes);
  try {
    await next();
  } finally {
    active.add(-1, attributes);
  }
}

/** The active span's ids and sampled flag, for a log line; nothing outside a span or with traces off. */
export function traceFields(): { traceId?: string; spanId?: string; sampled?: boolean } {
  const ids = trace.getActiveSpan()?.spanContext();
  return ids ? { traceId: ids.traceId, spanId: ids.spanId, sampled: (ids.traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED } : {};
}

/** `logger` whose every line carries `traceFields()` (a caller's own fields win). */
export function withTraceFields(logger: Logger): Logger {
  return { enabled: logger.enabled, log: (level, msg, fields) => logger.log(level, msg, { ...traceFields(), ...fields }) };
}

/** Run `fn` outside any trace: background work a request only set off (a dispatch nudge) starts its own. */
export function detached<T>(fn: () => T): T {
  return context.with(ROOT_CONTEXT, fn);
}

/** The instruments of the service, built on the meter of the registered provider. */
function build(meter: Meter) {
  const seconds = (name: string, description: string): Histogram =>
    meter.createHistogram(name, { unit: "s", description, advice: { explicitBucketBoundaries: DURATION_BUCKETS } });
  return {
    requestDuration: seconds("http.server.request.duration", "Duration of HTTP server requests, read-cache hits answered before the app included"),
    dbDuration: seconds("db.client.operation.duration", "Duration of database round trips (one execute or one batch)"),
    webhookAttemptDuration: seconds("petstore.webhook.attempt.duration", "Duration of webhook delivery attempts"),
    active: meter.createUpDownCounter("http.server.active_requests", { unit: "{request}", description: "HTTP server requests in flight" }),
    cacheLookups: meter.createCounter("petstore.read_cache.lookups", { description: "Public reads by read-cache outcome (hit, miss)" }),
    deliveries: meter.createCounter("petstore.webhook.deliveries", { description: "Webhook delivery attempts by outcome (delivered, retried, given_up)" }),
    retentionDeleted: meter.createCounter("petstore.retention.deleted", { unit: "{row}", description: "Rows deleted by retention, by kind" }),
  };
}

let built: { provider: unknown; instruments: ReturnType<typeof build> } | undefined;

/** The instruments, rebuilt when another meter provider has been registered since (none registered: no-ops). */
export function instruments(): ReturnType<typeof build> {
  const provider = metrics.getMeterProvider();
  if (built?.provider !== provider) built = { provider, instruments: build(provider.getMeter(SCOPE)) };
  return built.instruments;
}

/** Start the counters at 0 for each outcome, so that a rate over them exists before the first event (Prometheus practice). */
export function zeroCounters(): void {
  const { cacheLookups, deliveries } = instruments();
  for (const outcome of ["delivered", "retried", "given_up"]) deliveries.add(0, { "petstore.webhook.outcome": outcome });
  for (const outcome of ["hit", "miss"]) cacheLookups.add(0, { "petstore.read_cache.outcome": outcome });
}

/** Record one answered request (the request log's line): its duration by route and status, and the read cache's outcome. */
export function recordRequest(line: RequestLine): void {
  const { requestDuration, cacheLookups } = instruments();
  const attributes: Attributes = { "http.request.method": httpMethod(line.method), "http.response.status_code": line.status };
  if (line.route) attributes["http.route"] = line.route;
  requestDuration.record(line.durationMs / 1000, attributes);
  if (line.cache === "HIT" || line.cache === "MISS") cacheLookups.add(1, { "petstore.read_cache.outcome": line.cache.toLowerCase() });
}

/** Count webhook delivery attempts by outcome. */
export function recordDeliveries(outcomes: { delivered: number; retried: number; givenUp: number }): void {
  const { deliveries } = instruments();
  if (outcomes.delivered) deliveries.add(outcomes.delivered, { "petstore.webhook.outcome": "delivered" });
  if (outcomes.retried) deliveries.add(outcomes.retried, { "petstore.webhook.outcome": "retried" });
  if (outcomes.givenUp) deliveries.add(outcomes.givenUp, { "petstore.webhook.outcome": "given_up" });
}

/** Count the rows a retention run deleted, by kind (events, keys, idempotency, deliveries). */
export function recordRetention(deleted: Record<string, number>): void {
  const { retentionDeleted } = instruments();
  for (const [kind, rows] of Object.entries(deleted)) retentionDeleted.add(rows, { "petstore.retention.kind": kind });
}

/** What the webhook dispatcher's last look at its queue found (src/services/webhooks/dispatch.ts). */
export interface WebhookBacklog {
  /** Events committed past the dispatch state's place: not yet taken by a round. */
  pendingEvents: number;
  /** Subscriptions waiting in the queue (behind, or retrying). */
  queued: number;
  /** Something is due now (new events, a due retry or redelivery). */
  due: boolean;
  /** When it looked, ms since the epoch. */
  at: number;
}

let backlog: (WebhookBacklog & { caughtUp: number }) | undefined;

/** Note what the dispatcher found due; the gauges of `observeWebhookBacklog` report the latest. */
export function recordWebhookBacklog(seen: WebhookBacklog): void {
  backlog = { ...seen, caughtUp: seen.due ? (backlog?.caughtUp ?? seen.at) : seen.at };
}

/**
 * Gauges of the webhook backlog on `meter`: pending events, queued subscriptions, and the lag — seconds since the dispatcher last found
 * nothing due (0 while nothing is due), an upper bound of the age of the oldest due delivery.
 */
export function observeWebhookBacklog(meter: Meter, now: () => number = Date.now): void {
  const pending = meter.createObservableGauge("petstore.webhook.pending_events", { unit: "{event}", description: "Events not yet taken by a dispatch round" });
  const queued = meter.createObservableGauge("petstore.webhook.queued_subscriptions", {
    unit: "{subscription}",
    description: "Subscriptions behind or retrying",
  });
  const lag = meter.createObservableGauge("petstore.webhook.lag", {
    unit: "s",
    description: "Seconds since the dispatcher last found nothing due (0: caught up)",
  });
  meter.addBatchObservableCallback(
    (result) => {
      if (!backlog) return;
      result.observe(pending, backlog.pendingEvents);
      result.observe(queued, backlog.queued);
      result.observe(lag, backlog.due ? Math.max(0, now() - backlog.caughtUp) / 1000 : 0);
    },
    [pending, queued, lag],
  );
}
