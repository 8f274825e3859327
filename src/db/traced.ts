/** The database port with telemetry (docs/operations.md#traces): a client span and a `db.client.operation.duration` measurement per round trip. */
import { type Attributes, SpanKind, trace } from "@opentelemetry/api";
import { instruments } from "../telemetry/metrics";
import { errorType, inSpan } from "../telemetry/spans";
import type { Database, InStatement } from "./client";

/** The SQL verb of a statement (`SELECT`, `INSERT`, …), its `db.operation.name`, and its first table (`db.collection.name`), if any. */
function operation(statement: InStatement): { verb: string; table?: string } {
  const text = (typeof statement === "string" ? statement : statement.sql).trimStart();
  const end = text.search(/\s/);
  return { verb: (end < 0 ? text : text.slice(0, end)).toUpperCase(), table: /\b(?:from|into|update)\s+[`"]?(\w+)/i.exec(text)?.[1] };
}

/**
 * `db` whose `execute` and `batch` each run in a CLIENT span named by its `db.query.summary` (`SELECT pets`, or a plan's step names) and
 * record their duration in seconds. Errors propagate unchanged, with `error.type` on the span and the measurement.
 */
export function tracedDatabase(db: Database): Database {
  /** `call` in a span of `measured` and `spanOnly` attributes; its duration recorded with `measured` (and `error.type`). */
  const measure = async <T>(name: string, measured: Attributes, spanOnly: Attributes, call: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    try {
      // Outside any span (an idle poll's probe, start-up) a round trip is measured but starts no trace of its own.
      return await (trace.getActiveSpan() ? inSpan(name, { ...measured, ...spanOnly }, call, { kind: SpanKind.CLIENT }) : call());
    } catch (error) {
      measured["error.type"] = errorType(error);
      throw error;
    } finally {
      instruments().dbDuration.record((performance.now() - started) / 1000, measured);
    }
  };
  return {
    execute(statement) {
      const { verb, table } = operation(statement);
      const summary = table ? `${verb} ${table}` : verb;
      const spanOnly: Attributes = table ? { "db.collection.name": table, "db.query.summary": summary } : { "db.query.summary": summary };
      return measure(summary, { "db.system.name": "sqlite", "db.operation.name": verb }, spanOnly, () => db.execute(statement));
    },
    batch(statements, mode, summary) {
      const measured: Attributes = { "db.system.name": "sqlite", "db.operation.name": "BATCH", "petstore.db.transaction": mode };
      const spanOnly: Attributes = { "db.operation.batch.size": statements.length };
      if (summary) spanOnly["db.query.summary"] = summary;
      return measure(summary || `BATCH ${mode}`, measured, spanOnly, () => db.batch(statements, mode, summary));
    },
  };
}
