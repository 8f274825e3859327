/** The Node server's `Logger` on pino: `jsonLogger`'s lines, errors and warnings on stderr, the rest on stdout, written asynchronously (docs/operations.md#logs). */
import pino, { type DestinationStream } from "pino";
import type { Logger, LogLevel } from "../../logger";

/** Bytes a destination gathers before one write (one write per line would cost a system call each). */
const WRITE_BYTES = 8 * 1024;
/** Longest a gathered line waits for its write, ms. */
const FLUSH_MS = 250;

/** An asynchronous destination on file descriptor `fd`, written when WRITE_BYTES are gathered or FLUSH_MS have passed; flushed on exit. */
function buffered(fd: number): DestinationStream {
  const destination = pino.destination({ dest: fd, sync: false, minLength: WRITE_BYTES });
  const timer = setInterval(() => destination.flush(), FLUSH_MS).unref();
  destination.on("close", () => clearInterval(timer));
  return destination;
}

/** A logger writing lines at `minimum` and above through pino: info and debug to `out`, warn and error to `err` (default: stdout and stderr, `buffered`). */
export function pinoLogger(minimum: LogLevel, options: { out?: DestinationStream; err?: DestinationStream } = {}): Logger {
  const settings: pino.LoggerOptions = {
    level: minimum,
    base: undefined,
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  };
  const out = pino(settings, options.out ?? buffered(1));
  const err = pino(settings, options.err ?? buffered(2));
  return {
    enabled: (level) => out.isLevelEnabled(level),
    log(level, msg, fields = {}) {
      (level === "error" || level === "warn" ? err : out)[level](fields, msg);
    },
  };
}
