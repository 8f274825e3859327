/**
 * `npm run dashboard:workers [-- --check]`: the Worker's alerts as a Grafana dashboard, docs/monitoring/workers-dashboard.json
 * (docs/runbook.md#a-dashboard-for-the-workers-alerts), generated from docs/monitoring/workers-alerts.json so that its thresholds and
 * windows are the alerts' own. Its panels query Cloudflare's Workers Observability telemetry query API through the Grafana Infinity
 * data source (scripts/workers-dashboard-queries.ts). `--check` writes nothing and exits 1 when the file is not what the alerts give.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { loadWorkersAlerts, type WorkersAlert, windowMs } from "./workers-alerts";
import {
  apiFilters,
  calculationTarget,
  EVENTS_LIMIT,
  grafanaVariable,
  groupTarget,
  INFINITY,
  type InfinityTarget,
  rateTarget,
} from "./workers-dashboard-queries";

/** Where the dashboard is written. */
export const WORKERS_DASHBOARD_PATH = fileURLToPath(new URL("../docs/monitoring/workers-dashboard.json", import.meta.url));

/** A Grafana transformation of a panel (https://grafana.com/docs/grafana/latest/panels-visualizations/query-transform-data/transform-data/). */
interface Transformation {
  id: "joinByField" | "calculateField";
  options: Record<string, unknown>;
}

/** A time series panel of the dashboard JSON model (https://grafana.com/docs/grafana/latest/dashboards/build-dashboards/view-dashboard-json-model/). */
export interface Panel {
  id: number;
  type: "timeseries";
  title: string;
  description: string;
  datasource: { type: string; uid: string };
  gridPos: { h: number; w: number; x: number; y: number };
  links: { title: string; url: string }[];
  fieldConfig: { defaults: Record<string, unknown>; overrides: [] };
  targets: InfinityTarget[];
  transformations?: Transformation[];
}

/** A panel before its id and place: what it shows. */
type PanelBody = Omit<Panel, "id" | "gridPos" | "datasource">;

/** Field defaults: `unit`, and when `above` is given a red line at it (Grafana draws a threshold at or above its value). */
function fieldDefaults(unit: string, above: number | undefined, custom: Record<string, unknown> = {}): Record<string, unknown> {
  const steps = [{ color: "green", value: null }, ...(above === undefined ? [] : [{ color: "red", value: above }])];
  return { unit, min: 0, thresholds: { mode: "absolute", steps }, custom: { thresholdsStyle: { mode: above === undefined ? "off" : "line" }, ...custom } };
}

/** The panel's link to the alert's runbook entry, under the dashboard's `runbook` variable (docs/runbook.md by default). */
function runbookLink(alert: WorkersAlert): Panel["links"][number] {
  return { title: `Runbook: ${alert.alert}`, url: `${grafanaVariable("runbook")}#${alert.runbook_url.split("#")[1]}` };
}

/** `level error`, `durationMs above 10`, `method GET/HEAD/OPTIONS`: a line test in words. */
function inWords(fields: WorkersAlert["lines"]): string {
  const one = ([key, match]: [string, WorkersAlert["lines"][string]]) =>
    `${key} ${Array.isArray(match) ? match.join("/") : typeof match === "object" ? `above ${match.above}` : match}`;
  return Object.entries(fields).map(one).join("; ");
}

/** When the alert fires, and what a point of a panel is. */
function rule(alert: WorkersAlert, point: string): string {
  const windows = alert.windows.join(" and ");
  return (
    `${alert.alert} (${alert.severity}) fires when the value is above ${alert.above} over ${alert.windows.length > 1 ? "each of " : ""}` +
    `the last ${windows} (the red line). ${point} ${GENERATED}`
  );
}

const BUCKETS = "A bucket lasts the window at the time picker's ranges up to 24 h (one bucket when the range is shorter).";
const GENERATED = "Generated from docs/monitoring/workers-alerts.json by npm run dashboard:workers.";

/** The alert's share per bucket of `window`: the lines of the value's filter over the alert's lines, joined by time (none counts 0). */
function sharePanel(alert: WorkersAlert, window: string): PanelBody {
  const of = alert.ratio!.of;
  const queryId = (part: string) => `petstore-dashboard-${alert.alert}-${window}-${part}`;
  const lines = calculationTarget({
    refId: "A",
    queryId: queryId("lines"),
    filters: apiFilters(alert.lines),
    calculation: { operator: "count" },
    window,
    column: "lines",
  });
  const matching = calculationTarget({
    refId: "B",
    queryId: queryId("matching"),
    filters: apiFilters({ ...alert.lines, ...of }),
    calculation: { operator: "count" },
    window,
    column: "matching",
  });
  const byName = (name: string) => ({ matcher: { id: "byName", options: name } });
  return {
    type: "timeseries",
    title: `${alert.alert}: ${inWords(of)}, share of ${inWords(alert.lines)}, per ${window}`,
    description: rule(alert, `Each point: the share over one ${window} bucket. ${BUCKETS}`),
    links: [runbookLink(alert)],
    fieldConfig: { defaults: fieldDefaults("percentunit", alert.above), overrides: [] },
    targets: [lines, matching],
    transformations: [
      { id: "joinByField", options: { byField: "time", mode: "outer" } },
      {
        id: "calculateField",
        options: { mode: "reduceRow", reduce: { include: ["matching"], reducer: "sum", nullValueMode: "null as zero" }, alias: "matching or 0" },
      },
      {
        id: "calculateField",
        options: {
          mode: "binary",
          binary: { left: byName("matching or 0"), operator: "/", right: byName("lines") },
          alias: `share per ${window}`,
          replaceFields: true,
        },
      },
    ],
  };
}

/** For a share of lines over a bound (`durationMs` above 10): the 99th percentile of that field against the bound, the objective. */
function objectivePanel(alert: WorkersAlert): PanelBody | undefined {
  const bound = Object.entries(alert.ratio?.of ?? {}).find(
    (entry): entry is [string, { above: number }] => typeof entry[1] === "object" && !Array.isArray(entry[1]),
  );
  if (!bound) return undefined;
  const [key, { above }] = bound;
  const [unit, objective] = key.endsWith("Ms") ? ["ms", `${above} ms`] : ["none", String(above)];
  const window = alert.windows.reduce((a, b) => (windowMs(a) <= windowMs(b) ? a : b));
  const p99 = calculationTarget({
    refId: "A",
    queryId: `petstore-dashboard-${alert.alert}-p99`,
    filters: apiFilters(alert.lines),
    calculation: { operator: "p99", key, keyType: "number" },
    window,
    column: "p99",
  });
  return {
    type: "timeseries",
    title: `${alert.alert}: p99 ${key} of ${inWords(alert.lines)}, objective ${objective}, per ${window}`,
    description:
      `The objective: 99 % of these lines within ${objective} (the red line); p99 above it spends the budget that ${alert.alert} watches. ` +
      `Each point: p99 over one ${window} bucket. ${BUCKETS} ${GENERATED}`,
    links: [runbookLink(alert)],
    fieldConfig: { defaults: fieldDefaults(unit, above), overrides: [] },
    targets: [p99],
  };
}

/** For a share whose filter tests a value (`level error`): the alert's lines per second, by that field. */
function ratePanel(alert: WorkersAlert, window: string): PanelBody | undefined {
  const key = Object.keys(alert.ratio?.of ?? {}).find((k) => typeof alert.ratio!.of[k] === "string");
  if (!key) return undefined;
  return {
    type: "timeseries",
    title: `${alert.alert}: ${inWords(alert.lines)} per second, by ${key}`,
    description: `The traffic behind ${alert.alert}, by ${key}. Each point: the mean over one ${window} bucket. ${BUCKETS} ${GENERATED}`,
    links: [runbookLink(alert)],
    fieldConfig: { defaults: { ...fieldDefaults("reqps", undefined), displayName: grafanaVariable(`__field.labels.${key}`) }, overrides: [] },
    targets: [rateTarget("A", `petstore-dashboard-${alert.alert}-rate`, apiFilters(alert.lines), key, window)],
  };
}

/** A per-group alert's value per bucket of `window` and per group (subscription), as the alert computes it. */
function groupPanel(alert: WorkersAlert, window: string): PanelBody {
  const how = alert.sum ? `sum of ${alert.sum}` : `last ${alert.last}`;
  return {
    type: "timeseries",
    title: `${alert.alert}: ${how} per ${alert.by} of ${alert.each}, per ${window}`,
    description: rule(
      alert,
      `Each point: the ${how} of one ${alert.by} over one ${window} bucket, from the newest ${EVENTS_LIMIT} of the range's ` +
        `${inWords(alert.lines)} lines (a longer range shows only its end).`,
    ),
    links: [runbookLink(alert)],
    fieldConfig: {
      defaults: {
        ...fieldDefaults(alert.last?.endsWith("Seconds") ? "s" : "short", alert.above, { drawStyle: alert.sum ? "bars" : "line", showPoints: "always" }),
        displayName: `${alert.by} ${grafanaVariable(`__field.labels.${alert.by}`)}`,
      },
      overrides: [],
    },
    targets: [groupTarget("A", `petstore-dashboard-${alert.alert}-${window}`, alert, window)],
  };
}

/** Every panel of one alert: per-group alerts one per window; shares one per window, with their traffic or their objective. */
function alertPanels(alert: WorkersAlert): PanelBody[] {
  if (alert.each) return alert.windows.map((window) => groupPanel(alert, window));
  const shortest = alert.windows.reduce((a, b) => (windowMs(a) <= windowMs(b) ? a : b));
  const shares = alert.windows.map((window) => sharePanel(alert, window));
  return [ratePanel(alert, shortest), ...shares, objectivePanel(alert)].filter((panel): panel is PanelBody => panel !== undefined);
}

/** A textbox variable of the dashboard, with its default. */
function textbox(name: string, label: string, value: string): Record<string, unknown> {
  return { name, label, type: "textbox", query: value, current: { text: value, value }, hide: 0 };
}

/** The dashboard's JSON model for `alerts`: two panels a row, in the alerts' order. */
export function workersDashboard(alerts: WorkersAlert[]): Record<string, unknown> {
  const panels = alerts.flatMap(alertPanels).map(
    (panel, index): Panel => ({
      id: index + 1,
      ...panel,
      datasource: { type: INFINITY.id, uid: grafanaVariable("datasource") },
      gridPos: { h: 8, w: 12, x: (index % 2) * 12, y: Math.floor(index / 2) * 8 },
    }),
  );
  return {
    __requires: [
      { type: "grafana", id: "grafana", name: "Grafana", version: INFINITY.grafana },
      { type: "datasource", id: INFINITY.id, name: INFINITY.name, version: INFINITY.version },
    ],
    title: "Petstore on Workers: alerts",
    uid: "petstore-workers",
    description: "The Worker's alerts (docs/monitoring/workers-alerts.json) over Workers Logs. Generated by npm run dashboard:workers: do not edit.",
    schemaVersion: 39,
    version: 1,
    time: { from: "now-1h", to: "now" },
    refresh: "1m",
    tags: ["petstore", "workers"],
    templating: {
      list: [
        { name: "datasource", label: "Infinity data source", type: "datasource", query: INFINITY.id },
        textbox("account_id", "Cloudflare account ID", ""),
        textbox("service", "Worker", "petstore"),
        textbox("runbook", "Runbook", "docs/runbook.md"),
      ],
    },
    panels,
  };
}

/** Columns of the file: an object or array that fits stays on one line, as in docs/monitoring/dashboard.json. */
const WIDTH = 160;

/** `value` as JSON on one line, with a space after each `:` and `,`; `cap`, when given, stands for longer strings' length. */
function inline(value: unknown, cap = Number.POSITIVE_INFINITY): string {
  if (Array.isArray(value)) return `[${value.map((item) => inline(item, cap)).join(", ")}]`;
  if (value !== null && typeof value === "object")
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}: ${inline(v, cap)}`)
      .join(", ")}}`;
  const text = JSON.stringify(value);
  return text.length > cap ? text.slice(0, cap) : text;
}

/** Arrays whose items are written one a line, whatever their length: a query (its body and jq program are long strings anyway). */
const ONE_LINE_ITEMS = new Set(["targets", "transformations"]);

/** `value` as JSON indented by two spaces under `indent`, where its text starts at column `lead`; `key` is the member it is. */
function formatJson(value: unknown, indent = "", lead = 0, key = ""): string {
  // A request body or a jq program is one long string wherever it stands: it does not keep its object from one line.
  if (value === null || typeof value !== "object" || lead + inline(value, 40).length < WIDTH) return inline(value);
  const inner = `${indent}  `;
  const items = Array.isArray(value)
    ? value.map((item) => (ONE_LINE_ITEMS.has(key) ? inline(item) : formatJson(item, inner, inner.length)))
    : Object.entries(value).map(([name, item]) => `${JSON.stringify(name)}: ${formatJson(item, inner, inner.length + name.length + 4, name)}`);
  const [open, close] = Array.isArray(value) ? ["[", "]"] : ["{", "}"];
  return `${open}\n${items.map((item) => inner + item).join(",\n")}\n${indent}${close}`;
}

/** The file's text: the dashboard for docs/monitoring/workers-alerts.json, and a final newline. */
export function workersDashboardText(alerts = loadWorkersAlerts()): string {
  return `${formatJson(workersDashboard(alerts))}\n`;
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const text = workersDashboardText();
  if (process.argv.includes("--check")) {
    const current = readFileSync(WORKERS_DASHBOARD_PATH, "utf8");
    if (current !== text) console.error("docs/monitoring/workers-dashboard.json is not what workers-alerts.json gives: run npm run dashboard:workers");
    process.exitCode = current === text ? 0 : 1;
  } else {
    writeFileSync(WORKERS_DASHBOARD_PATH, text);
    console.log(`wrote docs/monitoring/workers-dashboard.json`);
  }
}
