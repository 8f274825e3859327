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

/** Start `floor` with the string bindings `vars`; resolves once it answers `probePath` (any status). */
export async function startFloorWorker(floor: Floor, vars: Record<string, string>, probePath = "/"): Promise<FloorWorker> {
  process.env.CLOUDFLARE_CF_FETCH_ENABLED ??= "false";
  process.env.WRANGLER_SEND_METRICS ??= "false";
  process.env.WRANGLER_LOG_PATH ??= join(ROOT, ".wrangler", "logs");
  const { unstable_readConfig, unstable_startWorker } = await import("wrangler");
  const real = unstable_readConfig({ config: join(ROOT, "wrangler.toml") });
  const worker = await unstable_startWorker({
    name: `bench-floor-${floor}`,
    entrypoint: join(ROOT, "scripts/bench-floors", `${floor}.ts`),
    compatibilityDate: real.compatibility_date,
    compatibilityFlags: real.compatibility_flags,
    bindings: Object.fromEntries(Object.entries(vars).map(([name, value]) => [name, { type: "plain_text" as const, value }])),
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
