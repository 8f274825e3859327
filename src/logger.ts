/** Structured logs, one JSON object per line (docs/operations.md#logs); callers pass only what may be logged: never keys, secrets or bodies. */
import { DrizzleQueryError } from "drizzle-orm/errors";
import { type RequestLine, type RequestTelemetry, serverFault } from "./telemetry/request-metrics";
import { traceFields } from "./telemetry/spans";

/** Severity, lowest first. */
export const LOG_LEVELS = ["debug", "info", "warn", "error"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Where finished lines go: `level` lets a runtime route errors to stderr. */
export type LogSink = (line: string, level: LogLevel) => void;

/** The default sink: errors and warnings to `console.error`, the rest to `console.log`. */
export const consoleSink: LogSink = (line, level) => (level === "error" || level === "warn" ? console.error(line) : console.log(line));

export interface Logger {
  /** True when lines of `level` are written (skip building expensive fields otherwise). */
  enabled(level: LogLevel): boolean;
  /** Write `{"time", "level", "msg", ...fields}` if `level` is enabled; undefined fields are left out. */
  log(level: LogLevel, msg: string, fields?: Record<string, unknown>): void;
}

/** A JSON-lines logger writing lines at `minimum` and above to `sink`. */
export function jsonLogger(minimum: LogLevel, sink: LogSink): Logger {
  const threshold = LOG_LEVELS.indexOf(minimum);
  const enabled = (level: LogLevel) => LOG_LEVELS.indexOf(level) >= threshold;
  return {
    enabled,
    log(level, msg, fields = {}) {
      if (!enabled(level)) return;
      sink(JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields }), level);
    },
  };
}

/** Name and message of `error` for a log; a DrizzleQueryError (its message holds bound parameters) gives the driver's error underneath. */
export function loggableError(error: unknown): { name: string; message: string } {
  let e = error;
  for (let depth = 0; depth < 4 && e instanceof DrizzleQueryError; depth++) e = e.cause;
  if (e instanceof DrizzleQueryError) return { name: "DrizzleQueryError", message: "a query failed (query and parameters not logged)" };
  return e instanceof Error ? { name: e.name, message: e.message } : { name: "Error", message: String(e) };
}

/**
 * At most one log line per `intervalMs` (ms) about events `E`: each event is `note`d into what gathered since the last line (`undefined`:
 * nothing yet); when a line is due, `write(event, since)` writes it with the event that opens it.
 */
export function everyInterval<E, N>(intervalMs: number, note: (since: N | undefined, event: E) => N, write: (event: E, since: N) => void): (event: E) => void {
  let last = Number.NEGATIVE_INFINITY;
  let since: N | undefined;
  return (event) => {
    since = note(since, event);
    if (Date.now() - last < intervalMs) return;
    last = Date.now();
    write(event, since);
    since = undefined;
  };
}

/** Log `line` at its status's level (`error` for 5xx but 501, else `info`), its duration to the µs; `telemetry` observes it first, unrounded. */
export function logRequest(logger: Logger, line: RequestLine, telemetry?: RequestTelemetry): void {
  telemetry?.observe?.(line);
  const level = serverFault(line.status) ? "error" : "info";
  if (logger.enabled(level)) logger.log(level, "request", { ...line, durationMs: Math.round(line.durationMs * 1000) / 1000 });
}

const monotonic = () => performance.now();

/** Milliseconds since `started` (a reading of `now`, default `performance.now`), unrounded. */
export function elapsedMs(started: number, now: () => number = monotonic): number {
  return now() - started;
}

/** `logger` whose every line carries `traceFields()` (a caller's own fields win). */
export function withTraceFields(logger: Logger): Logger {
  return { enabled: logger.enabled, log: (level, msg, fields) => logger.log(level, msg, { ...traceFields(), ...fields }) };
}
