/** The Worker's `RateLimiter`: Workers Rate Limiting bindings over a per-isolate count, both must allow (docs/configuration.md#rate-limits-on-workers-the-bindings). */
import { type BucketLimit, MemoryRateLimiter, type RateLimitDecision, type RateLimiter } from "../../http/rate-limiter";

/** The Workers Rate Limiting binding (`RateLimit` of @cloudflare/workers-types). */
export interface RateLimitBinding {
  limit(options: { key: string }): Promise<{ success: boolean }>;
}

/** Bindings by bucket prefix: `ip` (anonymous, per IP), `key` (per API key), `signup` (sign-ups per IP). */
export type RateLimitBindings = Partial<Record<"ip" | "key" | "signup", RateLimitBinding | undefined>>;

/** `simple.period` of every binding in wrangler.toml, seconds (the binding allows 10 or 60). */
const BINDING_PERIOD_SECONDS = 60;

/** The binding that counts each bucket prefix (accounts share the per-key binding: same per-minute limit). */
const BINDING_OF_PREFIX: Record<string, keyof RateLimitBindings> = { ip: "ip", key: "key", account: "key", signup: "signup" };

/** Binding names in wrangler.toml, by bucket prefix. */
export const RATE_LIMIT_BINDING_NAMES = { ip: "ANON_RATE_LIMITER", key: "KEY_RATE_LIMITER", signup: "SIGNUP_RATE_LIMITER" } as const;

/** A `RateLimiter` backed by Workers Rate Limiting bindings plus a per-isolate shadow count (see module docs). */
export class WorkersRateLimiter implements RateLimiter {
  /**
   * @param bindings the bindings by bucket prefix; missing ones leave their buckets to the shadow count.
   * @param shadow the per-isolate count (plain data: the Worker shares one across the limiters of its requests).
   */
  constructor(
    private readonly bindings: RateLimitBindings,
    private readonly onBindingError: (error: unknown) => void = () => {},
    private readonly shadow: MemoryRateLimiter = new MemoryRateLimiter(),
  ) {}

  /** A limiter over the bindings of RATE_LIMIT_BINDING_NAMES present in a Worker `env`, counted in `shadow` (default: a new counter). */
  static fromEnv(env: Record<string, unknown>, onBindingError?: (error: unknown) => void, shadow?: MemoryRateLimiter): WorkersRateLimiter {
    const pick = (name: string): RateLimitBinding | undefined => {
      const value = env[name] as Partial<RateLimitBinding> | undefined;
      return value && typeof value.limit === "function" ? (value as RateLimitBinding) : undefined;
    };
    const bindings = Object.fromEntries(Object.entries(RATE_LIMIT_BINDING_NAMES).map(([prefix, name]) => [prefix, pick(name)]));
    return new WorkersRateLimiter(bindings, onBindingError, shadow);
  }

  async consume(limits: readonly BucketLimit[], now: Date): Promise<RateLimitDecision> {
    const local = await this.shadow.consume(limits, now);
    if (!local.allowed) return local;
    const outcomes = await Promise.all(
      limits.map(async ({ bucket, limit }) => {
        const name = BINDING_OF_PREFIX[bucket.slice(0, bucket.indexOf(":"))];
        const binding = name && this.bindings[name];
        if (!binding) return undefined;
        try {
          return (await binding.limit({ key: bucket })).success ? undefined : limit;
        } catch (error) {
          this.onBindingError(error);
          return undefined;
        }
      }),
    );
    const refusedLimit = outcomes.find((limit) => limit !== undefined);
    if (refusedLimit === undefined) return local;
    return { allowed: false, limit: refusedLimit, remaining: 0, resetSeconds: Math.min(local.resetSeconds, BINDING_PERIOD_SECONDS) };
  }
}
