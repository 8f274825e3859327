/**
 * The Node server's logger: the `Logger` of src/lib/logger.ts on pino, whose
 * destinations write asynchronously (`pino.destination({ sync: false })`,
 * flushed on exit), so a log line never blocks a request. Same lines as
 * `jsonLogger`: `{"level", "time" (ISO 8601), …fields, "msg"}`, undefined
 * fields left out; errors and warnings on stderr, the rest on stdout.
 */
import pino, { type DestinationStream } from "pino";
import type { Logger, LogLevel } from "../lib/logger";

export interface PinoLoggerOptions {
  /** Where info and debug lines go (default: stdout, asynchronous). */
  out?: DestinationStream;
  /** Where warn and error lines go (default: stderr, asynchronous). */
  err?: DestinationStream;
}

/** A logger writing lines at `minimum` and above through pino. */
export function pinoLogger(minimum: LogLevel, options: PinoLoggerOptions = {}): Logger {
  const settings: pino.LoggerOptions = {
    level: minimum,
    base: undefined,
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  };
  const out = pino(settings, options.out ?? pino.destination({ dest: 1, sync: false }));
  const err = pino(settings, options.err ?? pino.destination({ dest: 2, sync: false }));
  return {
    enabled: (level) => out.isLevelEnabled(level),
    log(level, msg, fields = {}) {
      (level === "error" || level === "warn" ? err : out)[level](fields, msg);
    },
  };
}
