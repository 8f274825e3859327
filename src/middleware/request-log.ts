/**
 * The request log (docs/operations.md): one JSON line per request, on both
 * runtimes, at level `info` (`error` for 5xx responses but 501):
 *
 *   {"time":"…","level":"info","msg":"request","requestId":"…","method":"GET",
 *    "route":"/pets/:petId","status":200,"durationMs":3.1,"dbRoundTrips":1,
 *    "cache":"MISS","accountId":7}
 *
 * `route` is the matched route pattern (null when none matched: 404/405, or a
 * response served by the edge cache before routing); `cache` the `X-Cache`
 * outcome of the read caches (`HIT`, `MISS`, `BYPASS`, null when none ran);
 * `accountId` the caller's account when a valid key was sent. Never keys,
 * secrets, query strings or bodies.
 */
import type { MiddlewareHandler } from "hono";
import { routePath } from "hono/route";
import type { RequestRoundTrips } from "../db/round-trips";
import type { AppEnv } from "../http/context";
import type { Logger } from "../logger";

/** The fields of one request's line. */
export type RequestLine = {
  requestId: string;
  method: string;
  route: string | null;
  status: number;
  durationMs: number;
  dbRoundTrips: number;
  cache: string | null;
  accountId: number | null;
};

/** Log `line` at its status's level (`error` for 5xx but 501, else `info`). */
export function logRequest(logger: Logger, line: RequestLine): void {
  // 501 answers a method no route supports: the client's doing, like a 4xx, not the operator's problem.
  const level = line.status >= 500 && line.status !== 501 ? "error" : "info";
  if (logger.enabled(level)) logger.log(level, "request", line);
}

/** Milliseconds since `started` (a `performance.now()`), to 0.1 ms. */
export function elapsedMs(started: number): number {
  return Math.round((performance.now() - started) * 10) / 10;
}

/** Global middleware (first after the request id): times the request and logs it once answered. */
export function requestLog(logger: Logger, roundTrips: RequestRoundTrips): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const started = performance.now();
    const dbRoundTrips = await roundTrips.track(next);
    const route = routePath(c, -1);
    logRequest(logger, {
      requestId: c.get("requestId"),
      method: c.req.method,
      route: route && route !== "*" && route !== "/*" ? route : null,
      status: c.res.status,
      durationMs: elapsedMs(started),
      dbRoundTrips,
      cache: c.get("cacheStatus") ?? c.res.headers.get("X-Cache"),
      accountId: c.get("principal")?.accountId ?? null,
    });
  };
}
