/**
 * The Worker's log lines from Cloudflare's Workers Observability telemetry query API, for the scheduled alerts
 * (scripts/workers-alerts-page.ts, docs/runbook.md#running-them-on-a-schedule): the events of one Worker over a timeframe, page by
 * page, each turned back into the JSON line the Worker logged. The request and response follow the API reference, "Run a query":
 * https://developers.cloudflare.com/api/resources/workers/subresources/observability/subresources/telemetry/methods/query/
 */
import type { Line } from "./workers-alerts";

export const CLOUDFLARE_API_DEFAULT_BASE_URL = "https://api.cloudflare.com/client/v4";

/** Events asked for per request (`limit`), and requests per run at most: past 100,000 events in the window the run fails. */
const PAGE_LIMIT = 1000;
const MAX_PAGES = 100;

/** Which events to read: the API (base URL, account, a token with Workers Observability read), the Worker, and `from`–`to` (ms since the epoch). */
export interface EventsQuery {
  baseUrl: string;
  accountId: string;
  token: string;
  service: string;
  from: number;
  to: number;
}

/** A telemetry event as `result.events.events` holds it (the members read here): `source` is what the Worker logged. */
export interface TelemetryEvent {
  $metadata: { id: string; service?: string };
  timestamp: number;
  source: unknown;
}

/** The query API failed (refused, erred, unreachable or answered another shape): a message naming the API, never the token. */
export class ObservabilityApiError extends Error {}

const API = "Cloudflare Workers Observability query API (POST /accounts/{account_id}/workers/observability/telemetry/query)";

/**
 * The body of one "Run a query" request: the events view of `query.service`'s events (`$metadata.service`, the Worker's name) in the
 * timeframe, `PAGE_LIMIT` at a time; `offset` is the last event's `$metadata.id` of the page before (cursor pagination).
 */
export function queryBody(query: EventsQuery, offset?: string): Record<string, unknown> {
  return {
    queryId: `${query.service}-workers-alerts`,
    timeframe: { from: query.from, to: query.to },
    view: "events",
    limit: PAGE_LIMIT,
    parameters: { filterCombination: "and", filters: [{ key: "$metadata.service", operation: "eq", type: "string", value: query.service }] },
    ...(offset === undefined ? {} : { offset, offsetDirection: "next" }),
  };
}

/** The API's answer to one request: its events. @throws ObservabilityApiError when it is not 2xx with `success` and `result.events`. */
async function queryPage(query: EventsQuery, offset: string | undefined): Promise<TelemetryEvent[]> {
  let response: Response;
  try {
    response = await fetch(`${query.baseUrl}/accounts/${query.accountId}/workers/observability/telemetry/query`, {
      method: "POST",
      headers: { authorization: `Bearer ${query.token}`, "content-type": "application/json" },
      body: JSON.stringify(queryBody(query, offset)),
      signal: AbortSignal.timeout(30_000),
    });
  } catch (error) {
    throw new ObservabilityApiError(`${API} did not answer: ${causeOf(error)}`);
  }
  type Envelope = { success?: boolean; errors?: { code?: number; message?: string }[]; result?: { events?: { events?: TelemetryEvent[] } } };
  const body = (await response.json().catch(() => undefined)) as Envelope | undefined;
  if (!response.ok || body?.success !== true) {
    const said = (body?.errors ?? []).map((e) => `${e.message ?? "?"} (${e.code ?? "?"})`).join("; ");
    throw new ObservabilityApiError(`${API} answered ${response.status}${said ? `: ${said}` : ""}`);
  }
  if (!body.result?.events) throw new ObservabilityApiError(`${API} answered ${response.status} without result.events`);
  return body.result.events.events ?? [];
}

/**
 * Every event of `query`, following the cursor until a page brings no event not seen before.
 * @throws ObservabilityApiError when a request fails, or past MAX_PAGES pages (a partial window would skew every ratio).
 */
export async function workerEvents(query: EventsQuery): Promise<TelemetryEvent[]> {
  const seen = new Map<string, TelemetryEvent>();
  let offset: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const events = await queryPage(query, offset);
    const fresh = events.filter((event) => !seen.has(event.$metadata.id));
    if (fresh.length === 0) return [...seen.values()];
    for (const event of fresh) seen.set(event.$metadata.id, event);
    offset = events.at(-1)!.$metadata.id;
  }
  throw new ObservabilityApiError(`${API}: more than ${MAX_PAGES * PAGE_LIMIT} events of ${query.service} in the window; not evaluated`);
}

/** `text` parsed when it is a JSON object, else undefined. */
function jsonObject(text: string): Line | undefined {
  if (!text.startsWith("{")) return undefined;
  try {
    return JSON.parse(text) as Line;
  } catch {
    return undefined;
  }
}

/**
 * The JSON line the Worker logged that `event` carries, or undefined for another event (an invocation log, a plain-text line).
 * Workers Logs extracts a JSON line's fields into `source` (https://developers.cloudflare.com/workers/observability/logs/workers-logs/);
 * the API types `source` as a string or an object, and a line kept as text is `{ message }`: all three are read. A line without its
 * `time` gets the event's timestamp.
 */
export function eventLine(event: TelemetryEvent): Line | undefined {
  const source = event.source;
  let line: Line | undefined;
  if (typeof source === "string") line = jsonObject(source);
  else if (source !== null && typeof source === "object") {
    const fields = source as Line;
    line = typeof fields.msg === "string" ? fields : typeof fields.message === "string" ? jsonObject(fields.message) : undefined;
  }
  if (typeof line?.msg !== "string") return undefined;
  return typeof line.time === "string" ? line : { ...line, time: new Date(event.timestamp).toISOString() };
}

/** What a failed fetch says, without its URL: the cause's code (`ECONNREFUSED`, …) or the error's name. */
export function causeOf(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown } }).cause;
  if (typeof cause?.code === "string") return cause.code;
  return error instanceof Error ? error.name : "unknown error";
}
