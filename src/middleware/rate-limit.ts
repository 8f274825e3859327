/** Rate limiting (docs/api.md#rate-limits): `RateLimit-*` headers (draft-ietf-httpapi-ratelimit-headers); 429 `rate_limited` with `Retry-After`. */
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../http/context";
import { ApiError } from "../http/errors";
import { type RateLimitDecision, requestBudget } from "../http/rate-limiter";

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

/** Global middleware, after `authenticate`: one request of the caller's budget (`requestBudget`). @throws ApiError 429 `rate_limited`. */
export const rateLimit = createMiddleware<AppEnv>(async (c, next) => {
  const limits = requestBudget(c.get("config").rateLimits, c.get("principal")?.accountId, c.get("clientIp"));
  const decision = await c.get("rateLimiter").consume(limits, c.get("now")());
  if (!decision.allowed) throw rateLimited(decision, "requests");
  await next();
  for (const [name, value] of Object.entries(headersOf(decision))) {
    if (!c.res.headers.has(name)) c.res.headers.set(name, value);
  }
});

/** Route middleware for sign-ups: `signupsPerHour` per client IP; its headers replace the per-minute ones. */
export const signupLimit = createMiddleware<AppEnv>(async (c, next) => {
  const limit = c.get("config").rateLimits.signupsPerHour;
  const decision = await c.get("rateLimiter").consume([{ bucket: `signup:${c.get("clientIp")}`, limit, windowSeconds: 3600 }], c.get("now")());
  if (!decision.allowed) throw rateLimited(decision, "sign-ups from this address");
  await next();
  for (const [name, value] of Object.entries(headersOf(decision))) c.res.headers.set(name, value);
});
