/**
 * Rate limiting (API.md §5): per key when a valid key is given, per client IP
 * otherwise, plus sign-ups per IP per hour. Every counted response carries
 * `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset` (seconds;
 * draft-ietf-httpapi-ratelimit-headers); a refusal is 429 `rate_limited` with
 * `Retry-After` (RFC 9110 §10.2.3). The limiter and the client address come
 * from the context (`rateLimiter`, `clientIp`), set by the app from its runtime.
 */
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../lib/context";
import { ApiError } from "../lib/errors";
import type { RateLimitDecision } from "../lib/rate-limiter";

/** How the runtime tells a client's address (socket on Node, CF-Connecting-IP on Workers). */
export type ClientIp = (c: Context<AppEnv>) => string | undefined;

function headersOf(d: RateLimitDecision): Record<string, string> {
  return { "RateLimit-Limit": String(d.limit), "RateLimit-Remaining": String(d.remaining), "RateLimit-Reset": String(d.resetSeconds) };
}

/** 429 `rate_limited` for a refused decision, with the RateLimit-* headers and `Retry-After`. */
export function rateLimited(d: RateLimitDecision, what: string): ApiError {
  return new ApiError(429, "rate_limited", `Too many ${what}; retry in ${d.resetSeconds} s.`, undefined, {
    ...headersOf(d),
    "Retry-After": String(d.resetSeconds),
  });
}

/** Global middleware: 1 request of the caller's per-minute budget. Runs after `authenticate`. */
export const rateLimit = createMiddleware<AppEnv>(async (c, next) => {
  if (c.req.method === "OPTIONS") return next();
  const { anonPerMinute, keyPerMinute } = c.get("config").rateLimits;
  const principal = c.get("principal");
  const limiter = c.get("rateLimiter");
  const decision = principal
    ? await limiter.consume(`key:${principal.apiKeyId}`, keyPerMinute, 60, c.get("now")())
    : await limiter.consume(`ip:${c.get("clientIp")}`, anonPerMinute, 60, c.get("now")());
  if (!decision.allowed) throw rateLimited(decision, "requests");
  await next();
  for (const [name, value] of Object.entries(headersOf(decision))) {
    if (!c.res.headers.has(name)) c.res.headers.set(name, value);
  }
});

/** Route middleware for sign-ups: `signupsPerHour` per client IP; its headers replace the per-minute ones. */
export const signupLimit = createMiddleware<AppEnv>(async (c, next) => {
  const limit = c.get("config").rateLimits.signupsPerHour;
  const decision = await c.get("rateLimiter").consume(`signup:${c.get("clientIp")}`, limit, 3600, c.get("now")());
  if (!decision.allowed) throw rateLimited(decision, "sign-ups from this address");
  await next();
  for (const [name, value] of Object.entries(headersOf(decision))) c.res.headers.set(name, value);
});
