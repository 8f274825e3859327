/**
 * The queries of the Worker's dashboard (scripts/workers-dashboard.ts): Grafana Infinity targets that POST "Run a query" requests to
 * Cloudflare's Workers Observability telemetry query API and turn the answers into time series with Infinity's JQ parser.
 * Request: https://developers.cloudflare.com/api/resources/workers/subresources/observability/subresources/telemetry/methods/query/
 * Target fields, macros and parser: https://grafana.com/docs/plugins/yesoreyeram-infinity-datasource/latest/query/macros/ and
 * https://grafana.com/docs/plugins/yesoreyeram-infinity-datasource/latest/query/jq-backend/
 */
import { type WorkersAlert, windowMs } from "./workers-alerts";

/**
 * The Infinity data source plugin, and its first version with the JQ parser (3.3.0 in its CHANGELOG,
 * https://github.com/grafana/grafana-infinity-datasource/blob/main/CHANGELOG.md), which needs Grafana 10.4.8 (its plugin.json).
 */
export const INFINITY = { id: "yesoreyeram-infinity-datasource", name: "Infinity", version: "3.3.0", grafana: "10.4.8" } as const;

/** `${name}`: a Grafana variable reference, interpolated by Grafana (dashboard variables) or by Infinity (its macros). */
export const grafanaVariable = (name: string) => `\${${name}}`;

/** The query endpoint, for the account of the dashboard's `account_id` variable. */
export const QUERY_URL = `https://api.cloudflare.com/client/v4/accounts/${grafanaVariable("account_id")}/workers/observability/telemetry/query`;

/** Events per request of the events view: the newest this many lines of the range (the scheduled alerts read 1,000 per page too). */
export const EVENTS_LIMIT = 1000;

/** A leaf of `parameters.filters`: key, operation, type and value, as the reference spells them. */
export interface ApiFilter {
  key: string;
  operation: "eq" | "in" | "gt";
  type: "string" | "number";
  value: string | number;
}

type Match = WorkersAlert["lines"][string];

/** Lines of the Worker the dashboard's `service` variable names (`$metadata.service`, as the scheduled alerts filter). */
export const SERVICE_FILTER: ApiFilter = { key: "$metadata.service", operation: "eq", type: "string", value: grafanaVariable("service") };

/**
 * The API's filters for a line test of docs/monitoring/workers-alerts.json: a value is `eq`, several values `in` (comma-separated, as
 * the reference says), `{ above }` is `gt`. @throws Error for a list of numbers, which `in` cannot say as a string.
 */
export function apiFilters(fields: Record<string, Match>): ApiFilter[] {
  return Object.entries(fields).map(([key, match]): ApiFilter => {
    if (Array.isArray(match)) {
      if (match.some((value) => typeof value !== "string")) throw new Error(`${key}: only a list of strings becomes an "in" filter`);
      return { key, operation: "in", type: "string", value: match.join(",") };
    }
    if (typeof match === "object") return { key, operation: "gt", type: "number", value: match.above };
    if (typeof match === "boolean") throw new Error(`${key}: a line's filter is a string or a number`);
    return { key, operation: "eq", type: typeof match === "number" ? "number" : "string", value: match };
  });
}

/** The time picker's ranges up to a day: at these, a bucket is exactly the window. */
const RANGES = ["5m", "15m", "30m", "1h", "3h", "6h", "12h", "24h"];

/**
 * Infinity's `$__customInterval(range,value,…,default)` giving `granularity`, the number of buckets, so that a bucket lasts `window`
 * at each range of RANGES (one bucket when the range is shorter; past a day, a day's count of buckets).
 */
export function bucketsMacro(window: string): string {
  const buckets = RANGES.map((range) => [range, Math.max(1, Math.round(windowMs(range) / windowMs(window)))] as const);
  return `$__customInterval(${buckets.flat().join(",")},${buckets.at(-1)![1]})`;
}

/** An Infinity query of a panel (the fields its query editor saves); its data source is the panel's. */
export interface InfinityTarget {
  refId: string;
  type: "json";
  source: "url";
  parser: "jq-backend";
  format: "timeseries";
  url: string;
  url_options: { method: "POST"; body_type: "raw"; body_content_type: "application/json"; data: string };
  root_selector: string;
  columns: { selector: string; text: string; type: "timestamp" | "timestamp_epoch" | "string" | "number" }[];
}

/** The request body with Infinity's macros where JSON holds numbers: `${__timeFrom}`, `${__timeTo}` (ms) and `granularity`. */
function requestBody(request: Record<string, unknown>, granularity?: string): string {
  const text = JSON.stringify({ ...request, timeframe: { from: "@from", to: "@to" }, ...(granularity ? { granularity: "@granularity" } : {}) });
  return text
    .replace('"@from"', grafanaVariable("__timeFrom"))
    .replace('"@to"', grafanaVariable("__timeTo"))
    .replace('"@granularity"', granularity ?? "");
}

/** A JSON query POSTing `body` to the query API, its answer turned into rows by the JQ program `jq` and typed by `columns`. */
function target(refId: string, body: string, jq: string, columns: InfinityTarget["columns"]): InfinityTarget {
  return {
    refId,
    type: "json",
    source: "url",
    parser: "jq-backend",
    format: "timeseries",
    url: QUERY_URL,
    url_options: { method: "POST", body_type: "raw", body_content_type: "application/json", data: body },
    root_selector: jq,
    columns,
  };
}

/** A name that may stand in a jq program and a JSON key as written. @throws Error for another. */
function plain(name: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`not a plain field name: ${name}`);
  return name;
}

/** What one calculation target asks: its lines, one calculation (aliased `column`), and the bucket of `window`. */
export interface CalculationQuery {
  refId: string;
  queryId: string;
  filters: ApiFilter[];
  calculation: { operator: string; key?: string; keyType?: "number" };
  window: string;
  column: string;
}

/** The calculations view of `query`, one row per bucket: `time` and `column` (the bucket's value). */
export function calculationTarget(query: CalculationQuery): InfinityTarget {
  const column = plain(query.column);
  const body = requestBody(
    {
      queryId: query.queryId,
      view: "calculations",
      chart: true,
      parameters: { filterCombination: "and", filters: [SERVICE_FILTER, ...query.filters], calculations: [{ ...query.calculation, alias: column }] },
    },
    bucketsMacro(query.window),
  );
  const jq = `[.result.calculations[] | select(.alias == "${column}") | .series[] | {time: .time, ${column}: .data[0].value}]`;
  return target(query.refId, body, jq, [
    { selector: "time", text: "time", type: "timestamp" },
    { selector: column, text: column, type: "number" },
  ]);
}

/**
 * The lines of `filters` per second, by the value of `key`: a count grouped by `key` in buckets of `window`, divided by the bucket's
 * seconds (the answer's `run.timeframe` over its `run.granularity`). One series per value of `key` (a label).
 */
export function rateTarget(refId: string, queryId: string, filters: ApiFilter[], key: string, window: string): InfinityTarget {
  const label = plain(key);
  const body = requestBody(
    {
      queryId,
      view: "calculations",
      chart: true,
      parameters: {
        filterCombination: "and",
        filters: [SERVICE_FILTER, ...filters],
        calculations: [{ operator: "count", alias: "lines" }],
        groupBys: [{ type: "string", value: label }],
        limit: 10,
      },
    },
    bucketsMacro(window),
  );
  const jq =
    "((.result.run.timeframe.to - .result.run.timeframe.from) / .result.run.granularity / 1000) as $bucketSeconds" +
    ' | [.result.calculations[] | select(.alias == "lines") | .series[] | .time as $bucket | .data[]' +
    ` | {time: $bucket, ${label}: ([.groups[]? | select(.key == "${label}") | .value | tostring] | first), rate: (.value / $bucketSeconds)}]` +
    " | sort_by(.time)";
  return target(refId, body, jq, [
    { selector: "time", text: "time", type: "timestamp" },
    { selector: label, text: label, type: "string" },
    { selector: "rate", text: "rate", type: "number" },
  ]);
}

/**
 * The value of a per-group alert (`each`, `by`, `sum` or `last`) per bucket of `window` and per group, computed as
 * scripts/workers-alerts.ts does, from the events view of the alert's lines (the newest EVENTS_LIMIT of the range). A line's fields are
 * `source`, or its text when the API keeps it as a string or as `{ message }` (scripts/workers-observability.ts reads all three).
 */
export function groupTarget(refId: string, queryId: string, alert: WorkersAlert, window: string): InfinityTarget {
  const [each, by, field] = [plain(alert.each!), plain(alert.by!), plain((alert.sum ?? alert.last)!)];
  const bucket = windowMs(window);
  const body = requestBody({
    queryId,
    view: "events",
    limit: EVENTS_LIMIT,
    parameters: { filterCombination: "and", filters: [SERVICE_FILTER, ...apiFilters(alert.lines)] },
  });
  const line =
    '.source | if type == "string" then (fromjson? // {})' +
    ' elif type == "object" and (.msg | type) != "string" and (.message | type) == "string" then (.message | fromjson? // {})' +
    ' elif type == "object" then . else {} end';
  // The elements `where` keeps: a value each (the evaluator's other tests have no use here yet).
  const where = Object.entries(alert.where ?? {}).map(([key, value]) => {
    if (typeof value === "object") throw new Error(`${key}: only a value becomes an element filter`);
    return ` | select(.${plain(key)} == ${JSON.stringify(value)})`;
  });
  const reduce = alert.sum ? `{time: .[0].time, ${by}: .[0].${by}, value: (map(.value) | add)}` : `(max_by(.at) | {time, ${by}, value})`;
  const jq =
    `[.result.events.events[] | .timestamp as $at | (${line}) | (.${each} // [])[]${where.join("")}` +
    ` | {time: (($at / ${bucket} | floor) * ${bucket}), ${by}: (.${by} | tostring), at: $at, value: (.${field} // 0)}]` +
    ` | group_by([.time, .${by}]) | map(${reduce}) | sort_by([.time, .${by}])`;
  return target(refId, body, jq, [
    { selector: "time", text: "time", type: "timestamp_epoch" },
    { selector: by, text: by, type: "string" },
    { selector: "value", text: "value", type: "number" },
  ]);
}
