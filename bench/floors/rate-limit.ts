/**
 * What the floor Workers share: their bindings, and `RATE_LIMIT_CALLS` calls
 * of the Rate Limiting binding per request (as many as the real Worker makes
 * for that request), to show what the binding costs under `wrangler dev`.
 */
export interface FloorBindings {
  DATABASE_URL: string;
  RATE_LIMIT_CALLS?: string;
  RATE_LIMITER?: { limit(options: { key: string }): Promise<{ success: boolean }> };
}

/** Call `RATE_LIMITER.limit` `RATE_LIMIT_CALLS` times at once, as src/runtime/workers/rate-limiter.ts does. */
export async function spendRateLimits(env: FloorBindings): Promise<void> {
  const { RATE_LIMITER: binding } = env;
  if (!binding) return;
  const keys = Array.from({ length: Number(env.RATE_LIMIT_CALLS ?? 0) }, (_unused, i) => `floor:${i}`);
  await Promise.all(keys.map((key) => binding.limit({ key })));
}
