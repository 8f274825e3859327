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
import { elapsedMs, type Logger, logRequest } from "../logger";

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
      cache: c.res.headers.get("X-Cache"),
      accountId: c.get("principal")?.accountId ?? null,
    });
  };
}
