/**
 * The metrics table of docs/operations.md#metrics and the instruments declared in src/telemetry/instruments.ts agree both ways: every
 * declared instrument has a row under its Prometheus name and type, and every row names a declared instrument.
 */
import { readFileSync } from "node:fs";
import { expect, it } from "vitest";
import { exportedName, type Instrument, INSTRUMENTS } from "../../src/telemetry/instruments";

const doc = readFileSync(new URL("../../docs/operations.md", import.meta.url), "utf8");

/** Each row's metric names (a row may list several) with the row's type. */
function tableRows(): Map<string, string> {
  const start = doc.indexOf("| metric | type | labels | what |");
  expect(start, "the metrics table").toBeGreaterThan(0);
  const rows = new Map<string, string>();
  for (const line of doc.slice(start).split("\n").slice(2)) {
    if (!line.startsWith("|")) break;
    const [names, type] = line
      .split("|")
      .slice(1, 3)
      .map((cell) => cell.trim());
    for (const [, name] of names!.matchAll(/`([a-z0-9_]+)`/g)) rows.set(name!, type!);
  }
  return rows;
}

/** The series name a scrape shows: dots to underscores, the unit's suffix, `_total` on a counter (`petstore_retention_deleted_total`). */
function prometheusName(instrument: Instrument): string {
  const counter = instrument.kind === "counter" || instrument.kind === "observedCounter";
  return exportedName(instrument).replaceAll(".", "_") + (counter ? "_total" : "");
}

const TYPES = { histogram: "histogram", counter: "counter", observedCounter: "counter", upDown: "gauge", gauge: "gauge" } as const;

it("every declared instrument has its row, and every row a declaration", () => {
  const rows = tableRows();
  const declared = new Map(Object.values(INSTRUMENTS).map((instrument) => [prometheusName(instrument), TYPES[instrument.kind]]));
  expect(Object.fromEntries(rows)).toEqual(Object.fromEntries(declared));
});
