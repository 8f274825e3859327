/**
 * Node: OpenTelemetry traces (OTLP, switched on by the standard OTEL_* variables) and Prometheus metrics on their own listener
 * (METRICS_PORT). Off, nothing is loaded, registered or installed (docs/operations.md#traces, #metrics; variables: docs/configuration.md).
 */
import cluster from "node:cluster";
import type { MiddlewareHandler } from "hono";
import type { NodeSettings } from "../../config";
import type { Database } from "../../db/client";
import { tracedDatabase } from "../../db/traced";
import type { AppEnv } from "../../http/context";
import type { Logger } from "../../logger";
import { exportedNames, SCOPE } from "../../telemetry/instruments";
import { activeRequests, instruments, recordRequest, zeroCounters } from "../../telemetry/metrics";
import type { RequestTelemetry } from "../../telemetry/request-metrics";
import { answerScrapes, cannotServe } from "./cluster-metrics";
import { observeProcess } from "./process-metrics";
import { serviceAttributes } from "./service-resource";
import { webhookSeries } from "./webhook-series";
import { requestSpan } from "../request-span";

/** Telemetry that is on: what the app, the read cache's hits and the database get, and its end. */
export interface Telemetry {
  /** For the app (AppDeps.telemetry) and the read cache's hits. */
  requests: RequestTelemetry & { middleware: MiddlewareHandler<AppEnv>[] };
  /** `db`, traced and measured. */
  database(db: Database): Database;
  /** Where the scrape learns which subscriptions exist (their series: src/runtime/node/webhook-series.ts). */
  subscriptions(existing: () => Promise<number[]>): void;
  /** Flush the spans still queued and close the metrics listener. */
  shutdown(): Promise<void>;
}

/** Count every failed export (`petstore.telemetry.export_failures`) and log it, at most one line per `intervalMs` with the failures since the last. */
export function exportFailures(logger: Logger, intervalMs = 60_000, now: () => number = Date.now): (error: unknown) => void {
  let last = Number.NEGATIVE_INFINITY;
  let unlogged = 0;
  return (error) => {
    instruments().exportFailures.add(1);
    unlogged += 1;
    if (now() - last < intervalMs) return;
    last = now();
    const message = error instanceof Error ? error.message : typeof error === "string" ? error : JSON.stringify(error);
    logger.log("warn", "telemetry export failed", { error: message, failures: unlogged, nextLineAfterSeconds: intervalMs / 1000 });
    unlogged = 0;
  };
}

/**
 * Start what `settings` switch on: the OpenTelemetry SDK (traces: OTLP, configured by the OTEL_* variables; metrics: a Prometheus listener).
 * @returns undefined when everything is off (nothing loaded).
 * @throws Error when the metrics port cannot be bound.
 */
export async function startTelemetry(settings: NodeSettings["telemetry"], logger: Logger): Promise<Telemetry | undefined> {
  if (!settings.traces && !settings.metrics) return undefined;
  const [{ NodeSDK }, { PrometheusExporter }, { defaultResource, resourceFromAttributes }, { metrics }, sdkMetrics, { setGlobalErrorHandler }] =
    await Promise.all([
      import("@opentelemetry/sdk-node"),
      import("@opentelemetry/exporter-prometheus"),
      import("@opentelemetry/resources"),
      import("@opentelemetry/api"),
      import("@opentelemetry/sdk-metrics"),
      import("@opentelemetry/core"),
    ]);
  // The SDK hands every failed export to its global error handler.
  setGlobalErrorHandler(exportFailures(logger));
  const webhooks = webhookSeries(sdkMetrics);
  const prometheus = settings.metrics && new PrometheusExporter({ ...settings.metrics, preventServerStart: true, metricProducers: [webhooks] });
  const sdk = new NodeSDK({
    // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override it.
    resource: defaultResource().merge(resourceFromAttributes(serviceAttributes())),
    metricReaders: prometheus ? [prometheus] : [],
    // The Prometheus name gains its unit's suffix, as the OpenTelemetry-to-Prometheus rules write it.
    views: exportedNames(),
    // The service's logs stay JSON lines; no span processor when traces are off.
    logRecordProcessors: [],
    ...(settings.traces ? {} : { spanProcessors: [] }),
  });
  sdk.start();
  let stopObserving = () => {};
  if (prometheus) {
    // In a cluster the primary serves METRICS_PORT and asks each process for its text (./cluster-metrics.ts).
    if (cluster.isWorker) answerScrapes(prometheus);
    else await prometheus.startServer().catch(cannotServe(settings.metrics!));
    const meter = metrics.getMeter(SCOPE);
    stopObserving = observeProcess(meter);
    zeroCounters();
  }
  return {
    requests: {
      middleware: [...(settings.traces ? [requestSpan()] : []), ...(prometheus ? [activeRequests] : [])],
      observe: prometheus ? recordRequest : undefined,
    },
    database: tracedDatabase,
    subscriptions: (existing) => {
      webhooks.existing = existing;
    },
    shutdown: () => {
      stopObserving();
      return sdk.shutdown();
    },
  };
}
