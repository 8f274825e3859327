/**
 * Start one floor Worker of `npm run bench` (constant.ts, one-query.ts,
 * write-batch.ts in this folder) under workerd with wrangler's
 * `unstable_startWorker`, the engine of `wrangler dev`, configured like the
 * real Worker (scripts/local-worker.ts: same compatibility date and flags,
 * local mode, no watching, inspector or persistence). A floor "deployed like
 * the Worker" also gets the real Worker's `[assets]`, `[cache]` and
 * `[observability]` settings: under `wrangler dev` they put JavaScript of
 * the runtime (the assets router, tracing) in front of every request.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { ROOT } from "../../scripts/sqld";

export type Floor = "constant" | "one-query" | "write-batch";

interface FloorWorker {
  url: string;
  stop(): Promise<void>;
}

/** A Workers Rate Limiting binding that never refuses, as the bench's real Worker has (RATE_LIMITER). */
const UNLIMITED_RATE_LIMITER = { type: "ratelimit" as const, namespace_id: "9001", simple: { limit: 100_000_000, period: 60 as const } };

/** The floors' configuration file: wrangler.toml here, or, deployed like the Worker, one with the real Worker's request-path settings. */
function floorConfig(
  real: { assets?: { directory?: string; run_worker_first?: unknown }; cache?: unknown; observability?: unknown },
  likeTheWorker: boolean,
): string {
  const bare = join(ROOT, "bench/floors/wrangler.toml");
  if (!likeTheWorker) return bare;
  // wrangler reads JSON configuration too; written under .wrangler/ (ignored by git), paths absolute.
  const dir = join(ROOT, ".wrangler", "bench-floors");
  mkdirSync(dir, { recursive: true });
  const file = join(dir, "wrangler.json");
  const assets = real.assets && { directory: resolve(ROOT, real.assets.directory ?? "public"), run_worker_first: real.assets.run_worker_first };
  writeFileSync(file, JSON.stringify({ name: "bench-floor", assets, cache: real.cache, observability: real.observability }, null, 2));
  return file;
}

interface FloorOptions {
  /** Give it a Rate Limiting binding `RATE_LIMITER` that never refuses. */
  rateLimit?: boolean;
  /** Deploy it with the real Worker's `[assets]`, `[cache]` and `[observability]` settings (see the module comment). */
  likeTheWorker?: boolean;
}

/** Start `floor` with the string bindings `vars`; resolves once it answers a request for `/` (any status). */
export async function startFloorWorker(floor: Floor, vars: Record<string, string>, options: FloorOptions = {}): Promise<FloorWorker> {
  const { rateLimit = false, likeTheWorker = false } = options;
  process.env.CLOUDFLARE_CF_FETCH_ENABLED ??= "false";
  process.env.WRANGLER_SEND_METRICS ??= "false";
  process.env.WRANGLER_LOG_PATH ??= join(ROOT, ".wrangler", "logs");
  const { unstable_readConfig, unstable_startWorker } = await import("wrangler");
  const real = unstable_readConfig({ config: join(ROOT, "wrangler.toml") });
  const worker = await unstable_startWorker({
    config: floorConfig(real, likeTheWorker),
    name: `bench-floor-${floor}`,
    entrypoint: join(ROOT, "bench/floors", `${floor}.ts`),
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
    await (await fetch(`${url}/`)).text();
    return { url, stop: () => worker.dispose() };
  } catch (error) {
    await worker.dispose().catch(() => undefined);
    throw error;
  }
}
