/**
 * The `RateLimiter` of the Worker (API.md §5, issue 3): Cloudflare's Workers
 * Rate Limiting binding (`[[ratelimits]]` in wrangler.toml; docs:
 * https://developers.cloudflare.com/workers/runtime-apis/bindings/rate-limit/)
 * combined with a per-isolate shadow counter (`MemoryRateLimiter`).
 *
 * What the binding can and cannot do, and how this adapter bridges it:
 * - `binding.limit({ key })` → `{ success }` counts one request of `key`
 *   against the binding's own `simple = { limit, period }`, where period is
 *   10 or 60 seconds only. It is shared by every isolate of the Worker in one
 *   Cloudflare location (not globally) and is eventually consistent, so it is
 *   the cross-isolate guard but an approximate one.
 * - It reports neither a remaining count nor a reset time. `RateLimit-Remaining`
 *   and `RateLimit-Reset` therefore come from the shadow counter: an exact
 *   fixed-window count of the requests THIS isolate has seen for the bucket
 *   (windows aligned to the epoch, like on Node). Remaining is thus an upper
 *   bound (other isolates may have spent part of the budget) and Reset the end
 *   of the shadow window; both are best-effort on the edge, which the RateLimit
 *   header draft allows (they are hints, the 429 is authoritative).
 * - A request is allowed only if BOTH the shadow counter (the configured
 *   limit, `RATE_LIMIT_*` variables) and the binding (its wrangler.toml limit)
 *   allow it. Keep `simple.limit` of each binding equal to the matching
 *   variable: the stricter of the two wins. When the binding refuses, the
 *   answer is 429 with remaining 0 and Retry-After = the sooner of the shadow
 *   window's reset and the binding's period (`BINDING_PERIOD_SECONDS`, 60 s:
 *   the binding frees within one period; its window start is not reported).
 * - Hours: the binding cannot count per hour. Sign-ups (`signup:` buckets,
 *   window 3600 s) use a per-minute binding whose limit is
 *   ceil(RATE_LIMIT_SIGNUP_PER_HOUR / 60) (10/h → 1 per minute per IP per
 *   location), which bounds bursts across isolates, plus the shadow counter's
 *   exact hourly window per isolate. An address can thus get at most the hourly
 *   limit per isolate and at most 60 × ceil(hourly/60) per hour per location
 *   (10/h → ≤ 60/h in the worst case across many isolates, typically ~10).
 *   An exact global hourly limit would need a Durable Object or the database;
 *   not worth a round trip per sign-up here.
 * - Buckets are routed by prefix (`ip:`, `key:`, `signup:`, as written by
 *   src/middleware/rate-limit.ts) to the binding given for that prefix; a
 *   bucket without a binding (e.g. `wrangler dev` without `[[ratelimits]]`, or
 *   an unknown prefix) is counted by the shadow counter only.
 * - If a binding call throws, the request is decided by the shadow counter
 *   alone (fail open to the per-isolate limit): rate limiting must not take
 *   the API down.
 */
import { MemoryRateLimiter, type RateLimitDecision, type RateLimiter } from "../lib/rate-limiter";

/** The Workers Rate Limiting binding (`RateLimit` of @cloudflare/workers-types). */
export interface RateLimitBinding {
  limit(options: { key: string }): Promise<{ success: boolean }>;
}

/** Bindings by bucket prefix: `ip` (anonymous, per IP), `key` (per API key), `signup` (sign-ups per IP). */
export type RateLimitBindings = Partial<Record<"ip" | "key" | "signup", RateLimitBinding | undefined>>;

/** `simple.period` of every binding in wrangler.toml, seconds (the binding allows 10 or 60). */
export const BINDING_PERIOD_SECONDS = 60;

/** Binding names in wrangler.toml, by bucket prefix. */
export const RATE_LIMIT_BINDING_NAMES = { ip: "ANON_RATE_LIMITER", key: "KEY_RATE_LIMITER", signup: "SIGNUP_RATE_LIMITER" } as const;

/** A `RateLimiter` backed by Workers Rate Limiting bindings plus a per-isolate shadow count (see module docs). */
export class WorkersRateLimiter implements RateLimiter {
  /**
   * @param bindings the bindings by bucket prefix; missing ones leave their buckets to the shadow count.
   * @param shadow the per-isolate count (plain data, so it may outlive the request; the Worker
   *   passes one shared counter to the limiter it builds for each request).
   */
  constructor(
    private readonly bindings: RateLimitBindings,
    private readonly onBindingError: (error: unknown) => void = () => {},
    private readonly shadow: MemoryRateLimiter = new MemoryRateLimiter(),
  ) {}

  /**
   * The bindings named in wrangler.toml (RATE_LIMIT_BINDING_NAMES) that are present in a Worker `env`,
   * counted in `shadow` (default: a new counter).
   */
  static fromEnv(env: Record<string, unknown>, onBindingError?: (error: unknown) => void, shadow?: MemoryRateLimiter): WorkersRateLimiter {
    const pick = (name: string): RateLimitBinding | undefined => {
      const value = env[name] as Partial<RateLimitBinding> | undefined;
      return value && typeof value.limit === "function" ? (value as RateLimitBinding) : undefined;
    };
    return new WorkersRateLimiter(
      { ip: pick(RATE_LIMIT_BINDING_NAMES.ip), key: pick(RATE_LIMIT_BINDING_NAMES.key), signup: pick(RATE_LIMIT_BINDING_NAMES.signup) },
      onBindingError,
      shadow,
    );
  }

  async consume(bucket: string, limit: number, windowSeconds: number, now: Date): Promise<RateLimitDecision> {
    const local = await this.shadow.consume(bucket, limit, windowSeconds, now);
    if (!local.allowed) return local;
    const prefix = bucket.slice(0, bucket.indexOf(":")) as keyof RateLimitBindings;
    const binding = this.bindings[prefix];
    if (!binding) return local;
    let success: boolean;
    try {
      ({ success } = await binding.limit({ key: bucket }));
    } catch (error) {
      this.onBindingError(error);
      return local;
    }
    return success ? local : { allowed: false, limit, remaining: 0, resetSeconds: Math.min(local.resetSeconds, BINDING_PERIOD_SECONDS) };
  }
}

/** `simple.limit` of the per-minute sign-up binding for an hourly sign-up limit: ceil(hourly / 60). */
export function signupBindingLimitPerMinute(signupsPerHour: number): number {
  return Math.max(1, Math.ceil(signupsPerHour / 60));
}
