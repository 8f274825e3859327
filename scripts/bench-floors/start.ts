/**
 * Start one floor Worker of `npm run bench` (constant.ts, one-query.ts,
 * write-batch.ts in this folder) under workerd with wrangler's
 * `unstable_startWorker`, the engine of `wrangler dev`, configured like the
 * real Worker (scripts/local-worker.ts: same compatibility date and flags,
 * local mode, no watching, inspector or persistence).
 */
import { join } from "node:path";
import { ROOT } from "../sqld";

export type Floor = "constant" | "one-query" | "write-batch";

export interface FloorWorker {
  url: string;
  stop(): Promise<void>;
}

/** A Workers Rate Limiting binding that never refuses, as the bench's real Worker has (RATE_LIMITER). */
const UNLIMITED_RATE_LIMITER = { type: "ratelimit" as const, namespace_id: "9001", simple: { limit: 100_000_000, period: 60 as const } };

/**
 * Start `floor` with the string bindings `vars` (and, with `rateLimit`, a Rate
 * Limiting binding `RATE_LIMITER`); resolves once it answers `probePath` (any status).
 */
export async function startFloorWorker(
  floor: Floor,
  vars: Record<string, string>,
  options: { rateLimit?: boolean; probePath?: string } = {},
): Promise<FloorWorker> {
  const { rateLimit = false, probePath = "/" } = options;
  process.env.CLOUDFLARE_CF_FETCH_ENABLED ??= "false";
  process.env.WRANGLER_SEND_METRICS ??= "false";
  process.env.WRANGLER_LOG_PATH ??= join(ROOT, ".wrangler", "logs");
  const { unstable_readConfig, unstable_startWorker } = await import("wrangler");
  const real = unstable_readConfig({ config: join(ROOT, "wrangler.toml") });
  const worker = await unstable_startWorker({
    config: join(ROOT, "scripts/bench-floors/wrangler.toml"),
    name: `bench-floor-${floor}`,
    entrypoint: join(ROOT, "scripts/bench-floors", `${floor}.ts`),
    compatibilityDate: real.compatibility_date,
    compatibilityFlags: real.compatibility_flags,
    bindings: {
      ...Object.fromEntries(Object.entries(vars).map(([name, value]) => [name, { type: "plain_text" as const, value }])),
      ...(rateLimit ? { RATE_LIMITER: UNLIMITED_RATE_LIMITER } : {}),
    },
    sendMetrics: false,
    dev: { server: { hostname: "127.0.0.1", port: 0 }, inspector: false, watch: false, persist: false, logLevel: "error" },
  });
  try {
    await worker.ready;
    const url = (await worker.url).origin;
    await (await fetch(`${url}${probePath}`)).text();
    return { url, stop: () => worker.dispose() };
  } catch (error) {
    await worker.dispose().catch(() => undefined);
    throw error;
  }
}
