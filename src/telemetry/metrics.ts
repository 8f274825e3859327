/** Metrics through the OpenTelemetry API for every layer (docs/operations.md#metrics); no-ops until a meter provider is registered. */
import { type Attributes, type Meter, metrics } from "@opentelemetry/api";
import { create, INSTRUMENTS, SCOPE } from "./instruments";
import { type RequestLine, serverFault } from "./request-metrics";

/** The methods the HTTP conventions name; any other is `_OTHER`. */
const KNOWN_METHODS = new Set(["CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE", "QUERY"]);

/** `method` as the HTTP conventions' `http.request.method`: itself when they name it, else `_OTHER` (bounded label values). */
export function httpMethod(method: string): string {
  return KNOWN_METHODS.has(method) ? method : "_OTHER";
}

/** The instruments recorded on by the layers, built on the meter of the registered provider. */
const build = (meter: Meter) => ({
  requestDuration: create(meter, INSTRUMENTS.requestDuration),
  dbDuration: create(meter, INSTRUMENTS.dbDuration),
  webhookAttemptDuration: create(meter, INSTRUMENTS.webhookAttemptDuration),
  active: create(meter, INSTRUMENTS.active),
  cacheLookups: create(meter, INSTRUMENTS.cacheLookups),
  deliveries: create(meter, INSTRUMENTS.deliveries),
  retentionDeleted: create(meter, INSTRUMENTS.retentionDeleted),
  exportFailures: create(meter, INSTRUMENTS.exportFailures),
  refusals: create(meter, INSTRUMENTS.refusals),
});

let built: { provider: unknown; instruments: ReturnType<typeof build> } | undefined;

/** The instruments, rebuilt when another meter provider has been registered since (none registered: no-ops). */
export function instruments(): ReturnType<typeof build> {
  const provider = metrics.getMeterProvider();
  if (built?.provider !== provider) built = { provider, instruments: build(provider.getMeter(SCOPE)) };
  return built.instruments;
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

/** Start the counters at 0 for each outcome (`deliveryLabels`: the webhook outcomes' labels), so that a rate over them exists before the first event (Prometheus practice). */
export function zeroCounters(deliveryLabels: readonly string[]): void {
  const { cacheLookups, deliveries, exportFailures } = instruments();
  for (const label of deliveryLabels) deliveries.add(0, { "petstore.webhook.outcome": label });
  for (const outcome of ["hit", "miss"]) cacheLookups.add(0, { "petstore.read_cache.outcome": outcome });
  exportFailures.add(0);
}

/** Record one answered request (the request log's line): its duration by route, status and `error.type`, and the read cache's outcome. */
export function recordRequest(line: RequestLine): void {
  const { requestDuration, cacheLookups } = instruments();
  const attributes: Attributes = { "http.request.method": httpMethod(line.method), "http.response.status_code": line.status };
  if (line.route) attributes["http.route"] = line.route;
  // The conventions' `error.type` of a request that failed: its status, only when the failure is the service's (alerts select on it).
  if (serverFault(line.status)) attributes["error.type"] = String(line.status);
  requestDuration.record(line.durationMs / 1000, attributes);
  if (line.cache === "HIT" || line.cache === "MISS") cacheLookups.add(1, { "petstore.read_cache.outcome": line.cache.toLowerCase() });
}

/** Count webhook delivery attempts by outcome label (`petstore.webhook.outcome`). */
export function recordDeliveries(byLabel: Readonly<Record<string, number>>): void {
  const { deliveries } = instruments();
  for (const [label, count] of Object.entries(byLabel)) if (count > 0) deliveries.add(count, { "petstore.webhook.outcome": label });
}

/** Count the rows a retention run deleted, by kind (events, keys, idempotency, deliveries). */
export function recordRetention(deleted: Record<string, number>): void {
  const { retentionDeleted } = instruments();
  for (const [kind, rows] of Object.entries(deleted)) retentionDeleted.add(rows, { "petstore.retention.kind": kind });
}
