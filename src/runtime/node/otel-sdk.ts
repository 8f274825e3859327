/**
 * Node: OpenTelemetry traces (OTLP, switched on by the standard OTEL_* variables) and Prometheus metrics on their own listener
 * (METRICS_PORT). Off, nothing is loaded, registered or installed (docs/operations.md#traces, #metrics; variables: docs/configuration.md).
 */
import cluster from "node:cluster";
import type { Server } from "node:http";
import { type Meter, metrics } from "@opentelemetry/api";
import type { PrometheusExporter } from "@opentelemetry/exporter-prometheus";
import type { MiddlewareHandler } from "hono";
import type { NodeSettings } from "../../config";
import type { Database } from "../../db/client";
import { tracedDatabase } from "../../db/traced";
import type { AppEnv } from "../../http/context";
import { everyInterval, type Logger } from "../../logger";
import { exportedNames, SCOPE } from "../../telemetry/instruments";
import { activeRequests, instruments, recordRequest, zeroCounters } from "../../telemetry/metrics";
import type { RequestTelemetry } from "../../telemetry/request-metrics";
import { answerScrapes, exposition } from "./cluster-metrics";
import { serveMetrics } from "./metrics-listener";
import { observeProcess } from "./process-metrics";
import { ATTEMPT_OUTCOMES, OUTCOMES } from "../../domain/webhooks";
import type { SubscriptionSignals } from "../../telemetry/webhooks";
import { serviceResource } from "./service-resource";
import { type WebhookSeries, webhookSeries } from "./webhook-series";
import { requestSpan } from "../request-span";

/** Telemetry that is on: what the app, the read cache's hits and the database get, and its end. */
export interface Telemetry {
  /** For the app (AppDeps.telemetry) and the read cache's hits. */
  requests: RequestTelemetry & { middleware: MiddlewareHandler<AppEnv>[] };
  /** `db`, traced and measured. */
  database(db: Database): Database;
  /** Where the scrape reads each subscription's signals, backlogs `counted` or not (their series: src/runtime/node/webhook-series.ts). */
  subscriptions(source: (counted: boolean) => Promise<SubscriptionSignals[]>): void;
  /** Flush the spans still queued and close the metrics listener. */
  shutdown(): Promise<void>;
}

/** Count every failed export (`petstore.telemetry.export_failures`) and log it, at most one line per `intervalMs` with the failures since the last. */
function exportFailures(logger: Logger, intervalMs = 60_000): (error: unknown) => void {
  const log = everyInterval<unknown, number>(
    intervalMs,
    (since = 0) => since + 1,
    (error, failures) => {
      const message = error instanceof Error ? error.message : typeof error === "string" ? error : JSON.stringify(error);
      logger.log("warn", "telemetry export failed", { error: message, failures, nextLineAfterSeconds: intervalMs / 1000 });
    },
  );
  return (error) => {
    instruments().exportFailures.add(1);
    log(error);
  };
}

/**
 * Serve `prometheus`'s metrics: on `address` in a single process (./metrics-listener.ts), or to the primary's scrapes in a cluster's
 * server process (the primary serves METRICS_PORT: ./cluster-metrics.ts); observe the process on `meter` and zero the counters.
 * @returns what stops observing and closes the listener. @throws Error when the port cannot be bound.
 */
async function startMetrics(prometheus: PrometheusExporter, address: { host: string; port: number }, meter: Meter, series: WebhookSeries) {
  let server: Server | undefined;
  if (cluster.isWorker) answerScrapes(prometheus, series);
  else server = (await serveMetrics(address, () => exposition(prometheus))).unref();
  const stopObserving = observeProcess(meter);
  zeroCounters(OUTCOMES.map((outcome) => ATTEMPT_OUTCOMES[outcome].label));
  return async () => {
    stopObserving();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  };
}

/**
 * Start what `settings` switch on: the OpenTelemetry SDK (traces: OTLP, configured by the OTEL_* variables; metrics: a Prometheus listener).
 * @returns undefined when everything is off (nothing loaded). @throws Error when the metrics port cannot be bound.
 */
export async function startTelemetry(settings: NodeSettings["telemetry"], logger: Logger): Promise<Telemetry | undefined> {
  if (!settings.traces && !settings.metrics) return undefined;
  const [{ NodeSDK }, { PrometheusExporter }, resource, sdkMetrics, { setGlobalErrorHandler }] = await Promise.all([
    import("@opentelemetry/sdk-node"),
    import("@opentelemetry/exporter-prometheus"),
    serviceResource(),
    import("@opentelemetry/sdk-metrics"),
    import("@opentelemetry/core"),
  ]);
  // The SDK hands every failed export to its global error handler.
  setGlobalErrorHandler(exportFailures(logger));
  const webhooks = webhookSeries(sdkMetrics);
  const prometheus = settings.metrics && new PrometheusExporter({ ...settings.metrics, preventServerStart: true, metricProducers: [webhooks] });
  const sdk = new NodeSDK({
    resource,
    metricReaders: prometheus ? [prometheus] : [],
    views: exportedNames(),
    // The service's logs stay JSON lines; no span processor when traces are off.
    logRecordProcessors: [],
    ...(settings.traces ? {} : { spanProcessors: [] }),
  });
  sdk.start();
  const stopMetrics = prometheus ? await startMetrics(prometheus, settings.metrics!, metrics.getMeter(SCOPE), webhooks) : async () => {};
  return {
    requests: {
      middleware: [...(settings.traces ? [requestSpan()] : []), ...(prometheus ? [activeRequests] : [])],
      observe: prometheus ? recordRequest : undefined,
    },
    database: tracedDatabase,
    subscriptions: (source) => {
      webhooks.source = source;
    },
    shutdown: async () => {
      await stopMetrics();
      await sdk.shutdown();
    },
  };
}
