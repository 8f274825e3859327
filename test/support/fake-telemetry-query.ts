/**
 * Cloudflare's Workers Observability telemetry query, "Run a query"
 * (https://developers.cloudflare.com/api/resources/workers/subresources/observability/subresources/telemetry/methods/query/), as the
 * fake Cloudflare API (test/support/fake-cloudflare-api.ts) answers it over a list of Workers Logs events: the `events` view (the
 * scheduled alerts read it page by page) and the `calculations` view (the panels of docs/monitoring/workers-dashboard.json). Every
 * member and value of a request is checked against the reference; what it does not name, or what the fake does not serve, answers
 * 400, so a client that drifts from the reference fails its test instead of passing unseen.
 */

/** A Workers Logs event as the query's `result.events.events` holds it (the members the fake reads). */
export interface FakeTelemetryEvent {
  $metadata: { id: string; service: string; [key: string]: unknown };
  timestamp: number;
  source: unknown;
  dataset: string;
  [key: string]: unknown;
}

export interface QueryAnswer {
  status: number;
  body: unknown;
}

type Body = Record<string, unknown>;

/** The members of the request body and of `parameters`, as the reference lists them. */
const MEMBERS = new Set(["queryId", "timeframe", "view", "limit", "offset", "offsetBy", "offsetDirection", "parameters", "granularity"]);
const FLAGS = new Set(["chart", "compare", "dry", "ignoreSeries"]);
const PARAMETERS = new Set(["calculations", "datasets", "filterCombination", "filters", "groupBys", "havings", "limit", "needle", "orderBy"]);
const VIEWS = ["traces", "events", "calculations", "invocations", "requests", "agents"];
const CHART_TYPES = ["timeseries_and_aggregate", "timeseries", "aggregate", "distribution"];
const TYPES = ["string", "number", "boolean"];
const COMBINATIONS = ["and", "or", "AND", "OR"];
/** Filter operations of the reference; the fake serves the comparisons and sets (SERVED_OPERATIONS), not text search. */
const OPERATIONS =
  "includes not_includes starts_with ends_with regex exists is_null in not_in eq neq gt gte lt lte = != > >= < <= INCLUDES DOES_NOT_INCLUDE MATCH_REGEX EXISTS DOES_NOT_EXIST IN NOT_IN STARTS_WITH ENDS_WITH".split(
    " ",
  );
const SERVED_OPERATIONS: Record<string, (value: unknown, operand: unknown) => boolean> = {
  eq: (value, operand) => value === operand,
  neq: (value, operand) => value !== operand,
  in: (value, operand) => String(operand).split(",").includes(String(value)),
  not_in: (value, operand) => !String(operand).split(",").includes(String(value)),
  gt: (value, operand) => typeof value === "number" && value > Number(operand),
  gte: (value, operand) => typeof value === "number" && value >= Number(operand),
  lt: (value, operand) => typeof value === "number" && value < Number(operand),
  lte: (value, operand) => typeof value === "number" && value <= Number(operand),
};
/** Calculation operators of the reference; the fake serves count, the extremes, sum, mean and a few percentiles (nearest rank). */
const OPERATORS = "uniq count max min sum avg median p001 p01 p05 p10 p25 p75 p90 p95 p99 p999 stddev variance".split(" ");
const PERCENTILES: Record<string, number> = { median: 0.5, p90: 0.9, p95: 0.95, p99: 0.99 };

const isObject = (value: unknown): value is Body => value !== null && typeof value === "object" && !Array.isArray(value);
const unknownMembers = (value: Body, known: Set<string>) => Object.keys(value).filter((key) => !known.has(key));
const positiveInteger = (value: unknown) => value === undefined || (Number.isInteger(value) && (value as number) > 0);

/** What is wrong with a filter (a leaf or a group, `depth` groups deep), or undefined. */
function filterProblem(filter: unknown, depth = 0): string | undefined {
  if (!isObject(filter)) return "a filter is an object";
  if (filter.kind === "group") {
    if (depth >= 4) return "filter groups nest 4 deep at most";
    if (!COMBINATIONS.includes(String(filter.filterCombination)) || !Array.isArray(filter.filters)) return "a group needs filterCombination and filters";
    return filter.filters.map((inner) => filterProblem(inner, depth + 1)).find(Boolean);
  }
  const extra = unknownMembers(filter, new Set(["key", "operation", "type", "value", "kind"]));
  if (extra.length > 0) return `a filter has no ${extra.join(", ")}`;
  if (typeof filter.key !== "string" || !OPERATIONS.includes(String(filter.operation)) || !TYPES.includes(String(filter.type))) {
    return `a filter needs a key, an operation of the reference and a type: ${JSON.stringify(filter)}`;
  }
  if (!(String(filter.operation) in SERVED_OPERATIONS)) return `operation ${String(filter.operation)} is not served`;
  const expected = ["in", "not_in"].includes(String(filter.operation)) ? "string" : filter.type;
  if (typeof filter.value !== expected) return `${filter.key}: a ${String(filter.operation)} filter of type ${String(filter.type)} takes a ${expected} value`;
  return undefined;
}

/** What is wrong with a calculation, or undefined. */
function calculationProblem(calculation: unknown): string | undefined {
  if (!isObject(calculation)) return "a calculation is an object";
  const extra = unknownMembers(calculation, new Set(["operator", "alias", "key", "keyType"]));
  if (extra.length > 0) return `a calculation has no ${extra.join(", ")}`;
  const operator = String(calculation.operator).toLowerCase();
  if (!OPERATORS.includes(operator)) return `operator ${String(calculation.operator)} is not in the reference`;
  if (operator !== "count" && typeof calculation.key !== "string") return `${operator} needs a key`;
  if (calculation.key !== undefined && !TYPES.includes(String(calculation.keyType))) return "a calculation with a key needs its keyType";
  if (operator !== "count" && !["min", "max", "sum", "avg"].includes(operator) && !(operator in PERCENTILES)) return `operator ${operator} is not served`;
  return undefined;
}

/** What is wrong with a request body, or undefined. */
function requestProblem(query: Body): string | undefined {
  const extra = unknownMembers(query, new Set([...MEMBERS, ...FLAGS, "chartType"]));
  if (extra.length > 0) return `"Run a query" has no member ${extra.join(", ")}`;
  const { from, to } = isObject(query.timeframe) ? query.timeframe : {};
  if (typeof query.queryId !== "string" || !query.queryId || typeof from !== "number" || typeof to !== "number" || from >= to) {
    return "a query needs queryId and timeframe {from, to} (ms)";
  }
  if (!VIEWS.includes(String(query.view ?? "events"))) return `no view ${String(query.view)}`;
  if (![...FLAGS].every((flag) => query[flag] === undefined || typeof query[flag] === "boolean")) return "chart, compare, dry and ignoreSeries are booleans";
  if (query.chartType !== undefined && !CHART_TYPES.includes(String(query.chartType))) return `no chartType ${String(query.chartType)}`;
  if (!positiveInteger(query.limit) || !positiveInteger(query.granularity)) return "limit and granularity are positive integers";
  const parameters = query.parameters ?? {};
  if (!isObject(parameters)) return "parameters is an object";
  const unknownParameters = unknownMembers(parameters, PARAMETERS);
  if (unknownParameters.length > 0) return `parameters has no member ${unknownParameters.join(", ")}`;
  if (parameters.filterCombination !== undefined && !COMBINATIONS.includes(String(parameters.filterCombination))) return "filterCombination is and or or";
  const groupBys = (parameters.groupBys ?? []) as unknown[];
  if (
    !groupBys.every(
      (g) => isObject(g) && typeof g.value === "string" && TYPES.includes(String(g.type)) && unknownMembers(g, new Set(["type", "value"])).length === 0,
    )
  ) {
    return "a groupBy is {type, value}";
  }
  const filters = ((parameters.filters ?? []) as unknown[]).map((filter) => filterProblem(filter)).find(Boolean);
  return filters ?? ((parameters.calculations ?? []) as unknown[]).map(calculationProblem).find(Boolean);
}

/** The fields of the line an event carries: `source`'s fields, or the line its text (or `{ message }`) holds. */
function lineOf(event: FakeTelemetryEvent): Body {
  const parse = (text: unknown) => {
    try {
      const parsed: unknown = typeof text === "string" ? JSON.parse(text) : undefined;
      return isObject(parsed) ? parsed : {};
    } catch {
      return {};
    }
  };
  if (typeof event.source === "string") return parse(event.source);
  if (isObject(event.source) && typeof event.source.msg !== "string" && typeof event.source.message === "string") return parse(event.source.message);
  return isObject(event.source) ? event.source : {};
}

/** A key's value in an event: `$metadata.<name>` from its metadata, any other from its line. */
function fieldValue(event: FakeTelemetryEvent, key: string): unknown {
  return key.startsWith("$metadata.") ? event.$metadata[key.slice("$metadata.".length)] : lineOf(event)[key];
}

/** Whether `event` passes `filter` (a leaf, or a group of filters combined by its `filterCombination`). */
function passes(event: FakeTelemetryEvent, filter: Body): boolean {
  if (filter.kind === "group") return combine(event, filter.filters as Body[], String(filter.filterCombination));
  const value = fieldValue(event, String(filter.key));
  return typeof value === filter.type && SERVED_OPERATIONS[String(filter.operation)]!(value, filter.value);
}

const combine = (event: FakeTelemetryEvent, filters: Body[], how = "and") =>
  how.toLowerCase() === "or" ? filters.some((f) => passes(event, f)) : filters.every((f) => passes(event, f));

/** One calculation over `events`: count, the extremes, sum, mean, or a percentile by nearest rank (undefined without values). */
function calculate(calculation: Body, events: FakeTelemetryEvent[]): number | undefined {
  const operator = String(calculation.operator).toLowerCase();
  if (operator === "count") return events.length;
  const values = events.map((event) => fieldValue(event, String(calculation.key))).filter((value): value is number => typeof value === "number");
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const sum = values.reduce((a, b) => a + b, 0);
  const results: Record<string, () => number> = { min: () => sorted[0]!, max: () => sorted.at(-1)!, sum: () => sum, avg: () => sum / values.length };
  return results[operator]?.() ?? sorted[Math.max(0, Math.ceil(PERCENTILES[operator]! * sorted.length) - 1)]!;
}

/** `events` by the values of `groupBys` (one group without them), each with its `groups` as the answer lists them. */
function grouped(events: FakeTelemetryEvent[], groupBys: Body[]): { groups: { key: string; value: unknown }[]; events: FakeTelemetryEvent[] }[] {
  const byKey = new Map<string, { groups: { key: string; value: unknown }[]; events: FakeTelemetryEvent[] }>();
  for (const event of events) {
    const groups = groupBys.map((g) => ({ key: String(g.value), value: fieldValue(event, String(g.value)) }));
    if (groups.some((g) => g.value === undefined)) continue;
    const key = JSON.stringify(groups);
    byKey.set(key, { groups, events: [...(byKey.get(key)?.events ?? []), event] });
  }
  return [...byKey.values()];
}

/**
 * The calculations view: per calculation, its aggregates over the timeframe and its series of `granularity` buckets (60 when not
 * given) from `from`, each bucket at its start (ISO) with one datum per group. A bucket without events is left out: a client must
 * not count on the API to list it.
 */
function calculations(query: Body, parameters: Body, matching: FakeTelemetryEvent[]): Body {
  const { from, to } = query.timeframe as { from: number; to: number };
  const granularity = (query.granularity as number | undefined) ?? 60;
  const size = (to - from) / granularity;
  const groupBys = (parameters.groupBys ?? []) as Body[];
  const datum = (calculation: Body, group: ReturnType<typeof grouped>[number]) => {
    const value = calculate(calculation, group.events);
    return value === undefined
      ? []
      : [{ value, count: group.events.length, interval: size / 1000, sampleInterval: 1, ...(groupBys.length > 0 ? { groups: group.groups } : {}) }];
  };
  const buckets = Array.from({ length: granularity }, (_, i) =>
    matching.filter((e) => Math.min(granularity - 1, Math.floor((e.timestamp - from) / size)) === i),
  );
  return {
    run: { id: `run-${query.queryId}`, accountId: "fake", dry: query.dry === true, granularity, status: "COMPLETED", timeframe: { from, to } },
    statistics: { bytes_read: 0, elapsed: 0, rows_read: matching.length },
    calculations: ((parameters.calculations ?? []) as Body[]).map((calculation) => ({
      alias: calculation.alias,
      calculation: `${String(calculation.operator)}(${String(calculation.key ?? "")})`,
      aggregates: grouped(matching, groupBys).flatMap((group) => datum(calculation, group)),
      series: buckets.flatMap((events, i) => {
        const data = grouped(events, groupBys).flatMap((group) => datum(calculation, group));
        return data.length === 0 ? [] : [{ time: new Date(from + i * size).toISOString(), data }];
      }),
    })),
  };
}

/**
 * The answer to `body` over `events`: the events view (newest first, from the one after `offset`, `limit` and `pageSize` at most) or
 * the calculations view; 400 with the first problem of a request the reference or the fake does not allow.
 */
export function telemetryQuery(events: FakeTelemetryEvent[], body: unknown, pageSize: number): QueryAnswer {
  const query = isObject(body) ? body : {};
  const problem = isObject(body) ? requestProblem(query) : "the body is a JSON object";
  const view = query.view ?? "events";
  const served = problem ?? (["events", "calculations"].includes(String(view)) ? undefined : `view ${String(view)} is not served`);
  if (served) return { status: 400, body: envelope(null, [{ code: 10001, message: `fake: ${served}` }]) };
  const parameters = (query.parameters ?? {}) as Body;
  const { from, to } = query.timeframe as { from: number; to: number };
  const matching = events
    .filter(
      (event) =>
        event.timestamp >= from && event.timestamp <= to && combine(event, (parameters.filters ?? []) as Body[], String(parameters.filterCombination ?? "and")),
    )
    .sort((a, b) => b.timestamp - a.timestamp);
  if (view === "calculations") return { status: 200, body: envelope(calculations(query, parameters, matching)) };
  const start = query.offset === undefined ? 0 : matching.findIndex((event) => event.$metadata.id === query.offset) + 1;
  const page = matching.slice(start, start + Math.min((query.limit as number | undefined) ?? 50, pageSize));
  const run = { id: `run-${String(query.queryId)}`, dry: query.dry === true, status: "COMPLETED", timeframe: { from, to } };
  return {
    status: 200,
    body: envelope({ run, statistics: { bytes_read: 0, elapsed: 0, rows_read: matching.length }, events: { count: matching.length, events: page } }),
  };
}

/** The API's envelope (`{success, errors, messages, result}`). */
export function envelope(result: unknown, errors: { code: number; message: string }[] = []) {
  return { success: errors.length === 0, errors, messages: [], result };
}
