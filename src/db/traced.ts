/**
 * The database port with telemetry (docs/operations.md#traces): one client span and one `db.client.operation.duration` measurement per round
 * trip. Installed by a runtime only when its telemetry is on, like the round-trip counter (./round-trips.ts).
 */
import { type Attributes, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { instruments, SCOPE } from "../telemetry";
import type { Database, InStatement } from "./client";

/** The SQL verb of a statement (`SELECT`, `INSERT`, …): its `db.operation.name`. */
function verb(statement: InStatement): string {
  const text = (typeof statement === "string" ? statement : statement.sql).trimStart();
  const end = text.search(/\s/);
  return (end < 0 ? text : text.slice(0, end)).toUpperCase();
}

/**
 * `db` whose `execute` and `batch` each run in a CLIENT span (`db.system.name` sqlite, `db.operation.name` the SQL verb or `BATCH`,
 * `db.operation.batch.size`, `db.query.summary` a plan's step names, `petstore.db.transaction` read or write) and record their duration
 * in seconds. Errors propagate unchanged, with `error.type` on the span and the measurement.
 */
export function tracedDatabase(db: Database): Database {
  const tracer = trace.getTracer(SCOPE);
  const measure = async <T>(name: string, attributes: Attributes, call: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    return tracer.startActiveSpan(name, { kind: SpanKind.CLIENT, attributes }, async (span) => {
      try {
        return await call();
      } catch (error) {
        const type = error instanceof Error ? ((error as { code?: unknown }).code?.toString() ?? error.name) : "Error";
        attributes["error.type"] = type;
        span.setAttribute("error.type", type);
        span.setStatus({ code: SpanStatusCode.ERROR });
        throw error;
      } finally {
        span.end();
        delete attributes["db.query.summary"];
        delete attributes["db.operation.batch.size"];
        instruments().dbDuration.record((performance.now() - started) / 1000, attributes);
      }
    });
  };
  return {
    execute(statement) {
      const operation = verb(statement);
      return measure(operation, { "db.system.name": "sqlite", "db.operation.name": operation }, () => db.execute(statement));
    },
    batch(statements, mode, summary) {
      const attributes: Attributes = {
        "db.system.name": "sqlite",
        "db.operation.name": "BATCH",
        "db.operation.batch.size": statements.length,
        "petstore.db.transaction": mode,
      };
      if (summary) attributes["db.query.summary"] = summary;
      return measure(summary || `BATCH ${mode}`, attributes, () => db.batch(statements, mode, summary));
    },
  };
}
