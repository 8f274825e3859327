/** What one answered request tells the logs and the metrics (docs/operations.md#logs, #metrics): its line, and who observes it. */

/**
 * True when `status` is a failure of the service's own making: a 5xx but 501, which answers a method or transfer coding the client chose
 * and no route supports (RFC 9110 §15.6.2). The one rule of the log's level, the request span's status and the metric's `error.type`.
 */
export function serverFault(status: number): boolean {
  return status >= 500 && status !== 501;
}

/** The read cache's outcome for a request: answered from it, stored in it, or passed by; null: not a cacheable read. */
export type CacheOutcome = "HIT" | "MISS" | "BYPASS" | null;

/** The fields of one request's line of the request log (src/middleware/request-log.ts). */
export type RequestLine = {
  requestId: string;
  method: string;
  route: string | null;
  status: number;
  durationMs: number;
  dbRoundTrips: number;
  cache: CacheOutcome;
  accountId: number | null;
  /** The request span's ids and sampled flag, when traces are on (docs/operations.md#traces). */
  traceId?: string;
  spanId?: string;
  sampled?: boolean;
};

/** What a runtime with telemetry on adds to every request. */
export interface RequestTelemetry {
  /** Sees every request's line, whatever LOG_LEVEL (metrics). */
  observe?: (line: RequestLine) => void;
}
