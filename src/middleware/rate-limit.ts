/**
 * Rate limiting (docs/api.md#rate-limits): per key and per account (across all its keys,
 * the same limit) when a valid key is given, per client IP otherwise, plus
 * sign-ups per IP per hour; each in any rolling window of its length
 * (src/http/rate-limiter.ts). Every counted response carries
 * `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset` (seconds;
 * draft-ietf-httpapi-ratelimit-headers); a refusal is 429 `rate_limited` with
 * `Retry-After` (RFC 9110 §10.2.3). The limiter and the client address come
 * from the context (`rateLimiter`, `clientIp`), set by the app from its runtime.
 */
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../http/context";
import { ApiError } from "../http/errors";
import { anonymousBudget, type RateLimitDecision } from "../http/rate-limiter";

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

/**
 * Global middleware: 1 request of the caller's per-minute budget (its account's, or its address's). Runs after
 * `authenticate`. docs/api.md#rate-limits allows a key `keyPerMinute` and its account as many across all its keys: the
 * account's count is at least any of its keys', so the account budget alone holds both.
 */
export const rateLimit = createMiddleware<AppEnv>(async (c, next) => {
  if (c.req.method === "OPTIONS") return next();
  const { anonPerMinute, keyPerMinute } = c.get("config").rateLimits;
  const principal = c.get("principal");
  const limiter = c.get("rateLimiter");
  const limits = principal
    ? [{ bucket: `account:${principal.accountId}`, limit: keyPerMinute, windowSeconds: 60 }]
    : anonymousBudget(anonPerMinute, c.get("clientIp"));
  const decision = await limiter.consume(limits, c.get("now")());
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
