/** The app's error and fallback handlers: every failure is the Error object of docs/api.md#errors, with no stack trace or SQL. */
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import { DomainError } from "../domain/errors";
import type { AppEnv } from "../http/context";
import { ApiError, notImplemented } from "../http/errors";
import { type Logger, loggableError } from "../logger";
import { serverFault } from "../telemetry/request-metrics";
import { traceFields } from "../telemetry/spans";
import { domainErrorResponse } from "./domain-errors";

/** Codes of libSQL errors of the database connection, not of a statement. */
const CONNECTION_ERROR = /^(SERVER_ERROR|HRANA_|HTTP_|WEBSOCKET|SQLITE_(BUSY|LOCKED|CANTOPEN|IOERR|FULL|READONLY)|CLIENT_CLOSED|STREAM_|URL_|TRANSACTION_)/;

/** True for errors of the database connection (not of a statement), anywhere in the `cause` chain: answer 503. */
function isDatabaseUnavailable(error: unknown): boolean {
  for (let e = error as { name?: string; code?: string; cause?: unknown; message?: string } | undefined, depth = 0; e && depth < 4; depth++) {
    if (e.name === "LibsqlError" || e.name === "LibsqlBatchError") return CONNECTION_ERROR.test(String(e.code ?? ""));
    // fetch() to a remote libSQL server that is down.
    if (e instanceof TypeError && /fetch failed|network|ECONNREFUSED/i.test(String(e.message))) return true;
    // A request to the libSQL server past its time limit (src/db/driver/remote.ts, `timeLimited`).
    if (e.name === "TimeoutError") return true;
    e = e.cause as typeof e;
  }
  return false;
}

/** Any thrown value as an ApiError: domain errors by src/middleware/domain-errors.ts, connection errors 503, anything unknown 500 `internal_error`. */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof DomainError) return domainErrorResponse(error);
  // Thrown by Hono's validator (400: a body that is not JSON) and zod-openapi's (415: a body of another media type); nothing here throws other statuses.
  if (error instanceof HTTPException && error.status === 415) return new ApiError(415, "unsupported_media_type", "The request body must be application/json.");
  if (error instanceof HTTPException && error.status === 400) {
    if (/json/i.test(error.message)) return new ApiError(400, "invalid_json", "The request body is not valid JSON.");
    return new ApiError(400, "validation_error", error.message || "validation_error");
  }
  if (isDatabaseUnavailable(error))
    return new ApiError(503, "database_unavailable", "The database is unavailable; try again shortly.", undefined, { "Retry-After": "1" });
  return new ApiError(500, "internal_error", "An unexpected error occurred; quote the requestId when reporting it.");
}

/** Status of a request whose client closed the connection before it was answered (nginx's 499 "client closed request"; docs/operations.md#logs). */
export const CLIENT_CLOSED = 499;

/** True when `error` (or its `cause`) is the request body failing because the client went away: Node's `aborted` (ECONNRESET) or a premature close. */
export function clientWentAway(error: unknown): boolean {
  for (let e = error as { code?: unknown; message?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 4; depth++) {
    if (e.code === "ERR_STREAM_PREMATURE_CLOSE" || (e.code === "ECONNRESET" && e.message === "aborted")) return true;
    e = e.cause as typeof e;
  }
  return false;
}

/** Hono `onError` handler factory; `logger` receives unexpected errors with the request id (never request secrets or bodies). */
export function errorHandler(logger: Logger) {
  return (error: Error, c: Context<AppEnv>): Response => {
    if (clientWentAway(error)) return new Response(null, { status: CLIENT_CLOSED });
    const apiError = toApiError(error);
    if (serverFault(apiError.status)) {
      const logged = loggableError(error);
      logger.log("error", "unexpected error", {
        requestId: c.get("requestId"),
        method: c.req.method,
        path: c.req.path,
        status: apiError.status,
        error: `${logged.name}: ${logged.message}`.slice(0, 500),
        ...traceFields(),
      });
    }
    return renderError(c, apiError);
  };
}

/** The Error response of `apiError`, stamped with the request id and its extra headers. */
export function renderError(c: Context<AppEnv>, apiError: ApiError): Response {
  const res = c.json(apiError.toBody(c.get("requestId")), apiError.status);
  for (const [name, value] of Object.entries(apiError.headers ?? {})) res.headers.set(name, value);
  return res;
}

/** Compile Hono route paths (`/pets/:petId`) to exact regular expressions, as the strict router matches: `/pets/` is a 404, not a 405. */
function compileRoutes(routes: readonly { method: string; path: string }[]): { method: string; regex: RegExp }[] {
  return routes
    .filter((r) => r.method !== "ALL" && !r.path.includes("*"))
    .map((r) => ({
      method: r.method,
      regex: new RegExp(`^${r.path.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/:[A-Za-z0-9_]+/g, "[^/]+")}$`),
    }));
}

/** Hono `notFound` handler over `routes()`, compiled at its first call: 501 `not_implemented` for a method no route supports, 405 with `Allow` when the path exists (RFC 9110 §15.5.6), else 404. */
export function notFoundHandler(routes: () => readonly { method: string; path: string }[]) {
  let all: ReturnType<typeof compileRoutes> | undefined;
  let methods: Set<string> | undefined;
  return (c: Context<AppEnv>): Response => {
    all ??= compileRoutes(routes());
    methods ??= new Set([...all.map((r) => r.method), "HEAD", "OPTIONS"]);
    if (!methods.has(c.req.method)) return renderError(c, notImplemented(c.req.method));
    const allowed = new Set(all.filter((r) => r.regex.test(c.req.path)).map((r) => r.method));
    // A method the path does support never yields 405 (the route itself declined the request).
    if (allowed.size > 0 && !allowed.has(c.req.method)) {
      if (allowed.has("GET")) allowed.add("HEAD");
      allowed.add("OPTIONS");
      const allow = [...allowed].sort().join(", ");
      const message = `${c.req.method} is not allowed on ${c.req.path}; allowed: ${allow}.`;
      return renderError(c, new ApiError(405, "method_not_allowed", message, undefined, { Allow: allow }));
    }
    return renderError(c, new ApiError(404, "not_found", `No route matches ${c.req.method} ${c.req.path}.`));
  };
}
