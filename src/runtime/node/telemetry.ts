/**
 * Node: OpenTelemetry traces (OTLP, switched on by the standard OTEL_* variables) and Prometheus metrics on their own listener
 * (METRICS_PORT). Off, nothing is loaded, registered or installed (docs/operations.md#traces, #metrics; variables: docs/configuration.md).
 */
import { readFileSync } from "node:fs";
import { type Attributes, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import type { MiddlewareHandler } from "hono";
import type { Database } from "../../db/client";
import { tracedDatabase } from "../../db/traced";
import type { AppEnv } from "../../http/context";
import { matchedRoute } from "../../http/router";
import type { RequestTelemetry } from "../../logger";
import { observeProcess } from "./process-metrics";
import { activeRequests, errorType, httpMethod, observeWebhookBacklog, recordRequest, SCOPE, zeroCounters } from "../../telemetry";

/** What the environment switches on. */
export interface TelemetrySettings {
  /** Traces go to an OTLP endpoint (the SDK reads the OTEL_* variables itself). */
  traces: boolean;
  /** Where this process serves `/metrics`, if anywhere. */
  metrics?: { host: string; port: number };
}

/**
 * Instruments whose Prometheus name gains its unit (`http_server_request_duration_seconds`), as the OpenTelemetry-to-Prometheus
 * compatibility rules and Prometheus's own OTLP ingestion write them; the exporter adds only `_total`.
 */
const UNIT_SUFFIXED = [
  ["http.server.request.duration", "seconds"],
  ["db.client.operation.duration", "seconds"],
  ["petstore.webhook.attempt.duration", "seconds"],
  ["petstore.webhook.lag", "seconds"],
  ["nodejs.eventloop.delay", "seconds"],
  ["nodejs.eventloop.time", "seconds"],
  ["v8js.gc.duration", "seconds"],
  ["process.cpu.time", "seconds"],
  ["process.uptime", "seconds"],
  ["process.memory.usage", "bytes"],
  ["v8js.memory.heap.used", "bytes"],
  ["v8js.memory.heap.limit", "bytes"],
  ["v8js.memory.heap.max", "bytes"],
] as const;

/** Telemetry that is on: what the app, the read cache's hits and the database get, and its end. */
export interface Telemetry {
  /** For the app (AppDeps.telemetry) and the read cache's hits. */
  requests: RequestTelemetry & { middleware: MiddlewareHandler<AppEnv>[] };
  /** `db`, traced and measured. */
  database(db: Database): Database;
  /** Flush the spans still queued and close the metrics listener. */
  shutdown(): Promise<void>;
}

/**
 * The request span, by the HTTP server conventions: named `METHOD /route/:template`, continuing an incoming `traceparent`; `url.path`
 * without the query string (the logs drop it too), `url.scheme`, `server.address`, `client.address`, `user_agent.original`, the request
 * id. A 4xx stays Unset (the client's mistake, no exception event); a 5xx is Error with `error.type`.
 */
function requestSpan(): MiddlewareHandler<AppEnv> {
  const tracer = trace.getTracer(SCOPE);
  return async (c, next) => {
    const url = new URL(c.req.url);
    const method = httpMethod(c.req.method);
    const attributes: Attributes = {
      "http.request.method": method,
      "url.path": url.pathname,
      "url.scheme": url.protocol.slice(0, -1),
      "server.address": url.hostname,
      "user_agent.original": c.req.header("user-agent"),
    };
    if (url.port) attributes["server.port"] = Number(url.port);
    if (method === "_OTHER") attributes["http.request.method_original"] = c.req.method;
    const parent = propagation.extract(ROOT_CONTEXT, c.req.header());
    await tracer.startActiveSpan(method === "_OTHER" ? "HTTP" : method, { kind: SpanKind.SERVER, attributes }, parent, async (span) => {
      try {
        await next();
      } finally {
        const route = matchedRoute(c)?.path;
        const status = c.res.status;
        if (route) span.setAttribute("http.route", route).updateName(`${method === "_OTHER" ? "HTTP" : method} ${route}`);
        const client = c.get("clientIp");
        if (client && client !== "unknown") span.setAttribute("client.address", client);
        span.setAttribute("http.response.status_code", status).setAttribute("http.response.header.x-request-id", c.get("requestId"));
        if (status >= 500) span.setAttribute("error.type", c.error ? errorType(c.error) : String(status)).setStatus({ code: SpanStatusCode.ERROR });
        span.end();
      }
    });
  };
}

/** The `version` of the nearest package.json above this module (the source's or the bundle's), for `service.version`. */
function packageVersion(): string | undefined {
  for (let dir = new URL(".", import.meta.url); dir.pathname !== "/"; dir = new URL("..", dir)) {
    try {
      return (JSON.parse(readFileSync(new URL("package.json", dir), "utf8")) as { version?: string }).version;
    } catch {}
  }
  return undefined;
}

/**
 * Start what `settings` switch on: the OpenTelemetry SDK (traces from the OTEL_* variables, metrics for a Prometheus listener).
 * @returns undefined when everything is off (nothing loaded).
 * @throws Error when the metrics port cannot be bound.
 */
export async function startTelemetry(settings: TelemetrySettings): Promise<Telemetry | undefined> {
  if (!settings.traces && !settings.metrics) return undefined;
  const [{ NodeSDK }, { PrometheusExporter }, { defaultResource, resourceFromAttributes }, { metrics }] = await Promise.all([
    import("@opentelemetry/sdk-node"),
    import("@opentelemetry/exporter-prometheus"),
    import("@opentelemetry/resources"),
    import("@opentelemetry/api"),
  ]);
  const prometheus = settings.metrics && new PrometheusExporter({ ...settings.metrics, preventServerStart: true });
  const sdk = new NodeSDK({
    // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override it.
    resource: defaultResource().merge(resourceFromAttributes({ "service.name": "petstore", "service.version": packageVersion() })),
    metricReaders: prometheus ? [prometheus] : [],
    views: UNIT_SUFFIXED.map(([instrumentName, suffix]) => ({ instrumentName, name: `${instrumentName}_${suffix}` })),
    // The service's logs stay JSON lines; no span processor when traces are off.
    logRecordProcessors: [],
    ...(settings.traces ? {} : { spanProcessors: [] }),
  });
  sdk.start();
  let stopObserving = () => {};
  if (prometheus) {
    try {
      await prometheus.startServer();
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      throw new Error(`Cannot serve metrics on ${settings.metrics!.host}:${settings.metrics!.port} (${code ?? String(error)}): set METRICS_HOST/METRICS_PORT.`);
    }
    const meter = metrics.getMeter(SCOPE);
    stopObserving = observeProcess(meter);
    observeWebhookBacklog(meter);
    zeroCounters();
  }
  return {
    requests: {
      middleware: [...(settings.traces ? [requestSpan()] : []), ...(prometheus ? [activeRequests] : [])],
      observe: prometheus ? recordRequest : undefined,
    },
    database: tracedDatabase,
    shutdown: () => {
      stopObserving();
      return sdk.shutdown();
    },
  };
}
