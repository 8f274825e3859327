/**
 * The real Worker entry (src/worker.ts, wrangler.toml) under workerd, started
 * programmatically with wrangler's `unstable_startWorker` — the engine of
 * `wrangler dev`, in local mode, without file watching or on-disk state (the
 * Cache API and other local storage live in memory), and without an
 * inspector unless asked (`inspectorPort`).
 *
 * Used by the Worker test suite (test/worker/global-setup.ts); `npm run
 * dev:worker` runs the `wrangler dev` CLI instead, which adds watching.
 * Works offline: the `Request.cf` download is disabled
 * (CLOUDFLARE_CF_FETCH_ENABLED=false) and metrics are off; wrangler's log file
 * is written under the repository's `.wrangler/logs` (WRANGLER_LOG_PATH).
 */
import { join } from "node:path";
import type { unstable_startWorker as StartWorker } from "wrangler";
import { ROOT } from "./sqld";

/** A binding given to `unstable_startWorker` (wrangler's `Binding` type, not exported by name). */
type Binding = NonNullable<Parameters<typeof StartWorker>[0]["bindings"]>[string];

export interface LocalWorkerOptions {
  /** libSQL URL the Worker uses (`DATABASE_URL`), e.g. sqld's `http://127.0.0.1:PORT`. */
  databaseUrl: string;
  /** Extra Worker variables (strings), e.g. raised rate limits. */
  vars?: Record<string, string>;
  /**
   * New `simple.limit` per `[[ratelimits]]` binding name (local Workers Rate
   * Limiting bindings count for real; tests raise them with the RATE_LIMIT_* variables).
   */
  rateLimits?: Record<string, number>;
  /** Loopback port (default: a free one). */
  port?: number;
  /** Loopback port of the runtime's inspector, for CPU profiles (default: no inspector). */
  inspectorPort?: number;
  /** The Worker's entry module instead of wrangler.toml's `main` (the Worker suite's, with production's connection limit). */
  entrypoint?: string;
  /** wrangler/workerd log level (default "error": the app's error lines and crashes). */
  logLevel?: "debug" | "info" | "log" | "warn" | "error" | "none";
  /** Receives every line the Worker writes (console.log/error), whatever `logLevel`. */
  onLog?: (line: string) => void;
}

export interface LocalWorker {
  /** Base URL of the Worker, e.g. `http://127.0.0.1:41234`. */
  url: string;
  /** Stop workerd and wrangler's proxy. */
  stop(): Promise<void>;
}

/** Start the Worker locally; resolves once it answers `GET /health` with 200. */
export async function startLocalWorker(options: LocalWorkerOptions): Promise<LocalWorker> {
  process.env.CLOUDFLARE_CF_FETCH_ENABLED ??= "false";
  process.env.WRANGLER_SEND_METRICS ??= "false";
  // wrangler's debug log goes inside the repository (.wrangler/ is ignored), not ~/.config/.wrangler/logs;
  // wrangler reads this when its module loads, hence the import below.
  process.env.WRANGLER_LOG_PATH ??= join(ROOT, ".wrangler", "logs");
  const { unstable_readConfig, unstable_startWorker } = await import("wrangler");
  const configPath = join(ROOT, "wrangler.toml");
  const bindings: Record<string, Binding> = Object.fromEntries(
    Object.entries({ ...options.vars, DATABASE_URL: options.databaseUrl }).map(([name, value]) => [name, { type: "plain_text" as const, value }]),
  );
  if (options.rateLimits) {
    for (const { name, namespace_id, simple } of unstable_readConfig({ config: configPath }).ratelimits) {
      const limit = options.rateLimits[name];
      if (limit !== undefined) bindings[name] = { type: "ratelimit", namespace_id, simple: { ...simple, limit } };
    }
  }
  const worker = await unstable_startWorker({
    config: configPath,
    ...(options.entrypoint ? { entrypoint: options.entrypoint } : {}),
    bindings,
    sendMetrics: false,
    dev: {
      server: { hostname: "127.0.0.1", port: options.port ?? 0 },
      inspector: options.inspectorPort ? { hostname: "127.0.0.1", port: options.inspectorPort } : false,
      watch: false,
      persist: false,
      // `GET /__scheduled?cron=…` runs the `scheduled` handler (Cron Triggers) on demand.
      testScheduled: true,
      logLevel: options.logLevel ?? "error",
      ...(options.onLog ? { structuredLogsHandler: (log: { message: string }) => options.onLog?.(log.message) } : {}),
    },
  });
  try {
    await worker.ready;
    const url = (await worker.url).origin;
    // The first request pays workerd's start; make it here, and check the database link.
    const res = await fetch(`${url}/health`);
    const body = await res.text();
    if (res.status !== 200) throw new Error(`the Worker answered GET /health with ${res.status}: ${body}`);
    return { url, stop: () => worker.dispose() };
  } catch (error) {
    await worker.dispose().catch(() => undefined);
    throw error;
  }
}
