/** The request log: one JSON line per request on both runtimes; its fields and levels: docs/operations.md#logs. */
import type { MiddlewareHandler } from "hono";
import type { RequestRoundTrips } from "../db/round-trips";
import type { AppEnv } from "../http/context";
import { matchedRoute } from "../http/router";
import { elapsedMs, type Logger, logRequest } from "../logger";
import type { RequestLine, RequestTelemetry } from "../telemetry/request-metrics";
import { traceFields } from "../telemetry/spans";

/** Global middleware (first after the request id and the request span): times the request and logs it once answered. */
export function requestLog(logger: Logger, roundTrips: RequestRoundTrips, telemetry?: RequestTelemetry): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const started = performance.now();
    const dbRoundTrips = await roundTrips.track(next);
    const line: RequestLine = {
      requestId: c.get("requestId"),
      method: c.req.method,
      route: matchedRoute(c)?.path ?? null,
      status: c.res.status,
      durationMs: elapsedMs(started),
      dbRoundTrips,
      cache: c.get("cache") ?? null,
      accountId: c.get("principal")?.accountId ?? null,
      ...traceFields(),
    };
    logRequest(logger, line, telemetry);
  };
}
