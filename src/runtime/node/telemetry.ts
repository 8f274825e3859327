/**
 * Node: OpenTelemetry traces (OTLP, switched on by the standard OTEL_* variables) and Prometheus metrics on their own listener
 * (METRICS_PORT). Off, nothing is loaded, registered or installed (docs/operations.md#traces, #metrics; variables: docs/configuration.md).
 */
import { readFileSync } from "node:fs";
import type { MiddlewareHandler } from "hono";
import type { Database } from "../../db/client";
import { tracedDatabase } from "../../db/traced";
import type { AppEnv } from "../../http/context";
import type { RequestTelemetry } from "../../logger";
import { observeProcess } from "./process-metrics";
import { requestSpan } from "../request-span";
import { activeRequests, observeWebhookBacklog, recordRequest, SCOPE, zeroCounters } from "../../telemetry";

/** What the environment switches on. */
export interface TelemetrySettings {
  /** Traces go to an OTLP endpoint (the SDK reads the OTEL_* variables itself). */
  traces: boolean;
  /** Where this process serves `/metrics`, if anywhere. */
  metrics?: { host: string; port: number };
}

const PROTOCOLS = ["http/protobuf", "http/json", "grpc"];

/**
 * Read the switches: traces when an OTLP endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT` or `…_TRACES_ENDPOINT`) or `OTEL_TRACES_EXPORTER` other
 * than `none` is set, unless `OTEL_SDK_DISABLED=true`; metrics when `METRICS_PORT` is set, on `METRICS_HOST` (default 127.0.0.1), at
 * METRICS_PORT + `slot` (the cluster's process slot, 0 alone).
 * @throws Error naming the variable when METRICS_PORT or the OTLP protocol is invalid.
 */
export function telemetrySettings(env: Record<string, string | undefined>, slot = Number(env.PETSTORE_PROCESS_SLOT ?? 0)): TelemetrySettings {
  const exporter = env.OTEL_TRACES_EXPORTER?.trim();
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  const disabled = env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true";
  const traces = !disabled && (exporter ? exporter !== "none" : Boolean(endpoint));
  for (const name of ["OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"]) {
    const value = env[name]?.trim();
    if (traces && value && !PROTOCOLS.includes(value)) {
      throw new Error(`Invalid configuration: ${name}: must be one of ${PROTOCOLS.join(", ")}, not ${JSON.stringify(env[name])}`);
    }
  }
  const raw = env.METRICS_PORT?.trim();
  if (!raw) return { traces };
  const port = Number(raw);
  if (!/^\d+$/.test(raw) || port < 1 || port + slot > 65535) {
    throw new Error(`Invalid configuration: METRICS_PORT: must be an integer from 1 to 65535, not ${JSON.stringify(env.METRICS_PORT)}`);
  }
  return { traces, metrics: { host: env.METRICS_HOST?.trim() || "127.0.0.1", port: port + slot } };
}

const suffixed = (suffix: string, names: string[]) => names.map((name) => [name, suffix] as const);
/**
 * Instruments whose Prometheus name gains its unit (`http_server_request_duration_seconds`), as the OpenTelemetry-to-Prometheus
 * compatibility rules and Prometheus's own OTLP ingestion write them; the exporter adds only `_total`.
 */
const UNIT_SUFFIXED = [
  ...suffixed("seconds", ["http.server.request.duration", "db.client.operation.duration", "petstore.webhook.attempt.duration", "petstore.webhook.lag"]),
  ...suffixed("seconds", ["nodejs.eventloop.delay", "nodejs.eventloop.time", "v8js.gc.duration", "process.cpu.time", "process.uptime"]),
  ...suffixed("bytes", ["process.memory.usage", "v8js.memory.heap.used", "v8js.memory.heap.limit", "v8js.memory.heap.max"]),
];

/** Telemetry that is on: what the app, the read cache's hits and the database get, and its end. */
export interface Telemetry {
  /** For the app (AppDeps.telemetry) and the read cache's hits. */
  requests: RequestTelemetry & { middleware: MiddlewareHandler<AppEnv>[] };
  /** `db`, traced and measured. */
  database(db: Database): Database;
  /** Flush the spans still queued and close the metrics listener. */
  shutdown(): Promise<void>;
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
