/**
 * Workers Logs events built from lines a real local Worker wrote (test/tooling/recorded/, the rig of
 * test/worker/workers-alerts.test.ts: healthy requests and a subscriber, then a subscriber answering 500 with WEBHOOK_MAX_ATTEMPTS=2
 * and a database that stopped answering), for the fake telemetry query (test/support/fake-telemetry-query.ts).
 */
import { readFileSync } from "node:fs";
import { ROOT } from "../../scripts/sqld";
import type { FakeTelemetryEvent } from "./fake-telemetry-query";

export type RecordedLine = Record<string, unknown> & { time: string };

/** The recorded lines of `name`, moved so that the newest is at `newestAt` (ms; a minute ago by default), their spacing kept. */
export function recorded(name: "healthy" | "faults", newestAt = Date.now() - 60_000): RecordedLine[] {
  const lines = readFileSync(`${ROOT}/test/tooling/recorded/worker-${name}.jsonl`, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((text) => JSON.parse(text) as RecordedLine);
  const shift = newestAt - Math.max(...lines.map((line) => Date.parse(line.time)));
  return lines.map((line) => ({ ...line, time: new Date(Date.parse(line.time) + shift).toISOString() }));
}

/**
 * Workers Logs events of `lines` logged by Worker `service`. The API types `source` as a string or an object: the events take, turn
 * by turn, the line's fields, the line as a string, and `{ message: line }` (a line Workers Logs kept as text).
 */
export function telemetryEvents(lines: RecordedLine[], service = "petstore"): FakeTelemetryEvent[] {
  return lines.map((line, i) => {
    const text = JSON.stringify(line);
    return {
      dataset: "cloudflare-workers",
      timestamp: Date.parse(line.time),
      source: [line, text, { message: text }][i % 3],
      $metadata: { id: `${service}-${i}`, service, level: String(line.level), message: text },
      $workers: { scriptName: service, eventType: "fetch", requestId: String(line.requestId ?? i) },
    };
  });
}
