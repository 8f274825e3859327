/** Every instrument of the service, declared once: meters build them and the exporter names them from here (docs/operations.md#metrics lists them). */
import type { Counter, Histogram, Meter, ObservableCounter, ObservableGauge, UpDownCounter } from "@opentelemetry/api";

/** The instrumentation scope of every span and instrument of the service. */
export const SCOPE = "petstore";

/** Buckets of the duration histograms, seconds: from 100 µs, as the service answers in tens of µs to a few ms, up to 10 s. */
export const DURATION_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Buckets of the event-loop delay histogram, seconds: 1 ms to 5 s. */
const LOOP_DELAY_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

type Kinds = { histogram: Histogram; counter: Counter; upDown: UpDownCounter; gauge: ObservableGauge; observedCounter: ObservableCounter };
type InstrumentKind = keyof Kinds;

/** One instrument: its OpenTelemetry name, kind, unit (UCUM) and description; a histogram's buckets. */
export interface Instrument<K extends InstrumentKind = InstrumentKind> {
  name: string;
  kind: K;
  unit?: string;
  description: string;
  buckets?: number[];
}

const declare = <K extends InstrumentKind>(name: string, kind: K, description: string, unit?: string, buckets?: number[]): Instrument<K> => ({
  name,
  kind,
  description,
  unit,
  buckets: buckets ?? (kind === "histogram" ? DURATION_BUCKETS : undefined),
});

/** The instruments, by the key the code uses. */
export const INSTRUMENTS = {
  requestDuration: declare("http.server.request.duration", "histogram", "Duration of HTTP server requests, read-cache hits included", "s"),
  dbDuration: declare("db.client.operation.duration", "histogram", "Duration of database round trips (one execute or one batch)", "s"),
  webhookAttemptDuration: declare("petstore.webhook.attempt.duration", "histogram", "Duration of webhook delivery attempts", "s"),
  active: declare("http.server.active_requests", "upDown", "HTTP server requests in flight", "{request}"),
  cacheLookups: declare("petstore.read_cache.lookups", "counter", "Public reads by read-cache outcome (hit, miss)"),
  deliveries: declare("petstore.webhook.deliveries", "counter", "Webhook delivery attempts by outcome (delivered, retried, given_up)"),
  retentionDeleted: declare("petstore.retention.deleted", "counter", "Rows deleted by retention, by kind", "{row}"),
  subscriptionAttempts: declare("petstore.webhook.subscription.attempts", "observedCounter", "Attempts by subscription and outcome", "{attempt}"),
  subscriptionBacklog: declare("petstore.webhook.subscription.backlog", "gauge", "Events after a subscription's place that it wants", "{event}"),
  subscriptionOldest: declare("petstore.webhook.subscription.oldest_age", "gauge", "Age of a subscription's oldest undelivered event", "s"),
  refusals: declare("petstore.http.refusals", "counter", "Requests refused before the app (Node's edge), by reason", "{request}"),
  exportFailures: declare("petstore.telemetry.export_failures", "counter", "Span exports that failed (collector down or refusing)", "{export}"),
  restarts: declare("petstore.cluster.restarts", "counter", "Server processes replaced after exiting while serving, by slot", "{restart}"),
  processUp: declare("petstore.cluster.process.up", "gauge", "Whether a server process answered the primary's last scrape (1) or not (0)"),
  cpu: declare("process.cpu.time", "observedCounter", "CPU seconds by mode (user, system)", "s"),
  uptime: declare("process.uptime", "gauge", "Seconds since the process started", "s"),
  // The Prometheus clients' `process_start_time_seconds`: a restart shows as a new value, whatever the scrape interval.
  startTime: declare("process.start_time", "gauge", "When the process started, seconds since the Unix epoch", "s"),
  rss: declare("process.memory.usage", "gauge", "Resident set size", "By"),
  // The Prometheus clients' name: the conventions' `process.open_file_descriptor.count` would end in `_count`, which promtool refuses.
  files: declare("process.open_fds", "gauge", "Open file descriptors"),
  heapUsed: declare("v8js.memory.heap.used", "gauge", "V8 heap used, by space", "By"),
  heapLimit: declare("v8js.memory.heap.limit", "gauge", "V8 heap size, by space", "By"),
  heapCap: declare("v8js.memory.heap.max", "gauge", "The V8 heap's cap (--max-old-space-size)", "By"),
  loopTime: declare("nodejs.eventloop.time", "observedCounter", "Event-loop seconds by state (active, idle)", "s"),
  gc: declare("v8js.gc.duration", "histogram", "GC pauses by type", "s", [0.001, 0.01, 0.1, 1, 10]),
  loopDelay: declare("nodejs.eventloop.delay", "histogram", "Event-loop delay: the worst of each second", "s", LOOP_DELAY_BUCKETS),
} as const;

/** The Prometheus name's suffix of a unit, as the OpenTelemetry-to-Prometheus compatibility rules write it; other units add none. */
const UNIT_SUFFIXES: Record<string, string> = { s: "seconds", By: "bytes" };

/** The name the exporter is given: the instrument's, with its unit's suffix (`http.server.request.duration_seconds`). */
export function exportedName(instrument: Instrument): string {
  const suffix = instrument.unit && UNIT_SUFFIXES[instrument.unit];
  return suffix ? `${instrument.name}_${suffix}` : instrument.name;
}

/** A MeterProvider's views that give every instrument its exported name (`exportedName`); the Prometheus exporter adds only `_total`. */
export function exportedNames(): { instrumentName: string; name: string }[] {
  return Object.values(INSTRUMENTS).map((instrument) => ({ instrumentName: instrument.name, name: exportedName(instrument) }));
}

/** Build `instrument` on `meter`. */
export function create<K extends InstrumentKind>(meter: Meter, instrument: Instrument<K>): Kinds[K] {
  const { name, unit, description, buckets } = instrument;
  const options = { unit, description, ...(buckets ? { advice: { explicitBucketBoundaries: buckets } } : {}) };
  const make: { [k in InstrumentKind]: () => Kinds[k] } = {
    histogram: () => meter.createHistogram(name, options),
    counter: () => meter.createCounter(name, options),
    upDown: () => meter.createUpDownCounter(name, options),
    gauge: () => meter.createObservableGauge(name, options),
    observedCounter: () => meter.createObservableCounter(name, options),
  };
  return make[instrument.kind]();
}
