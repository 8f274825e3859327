/** Workers Cache (docs/caching.md): `edgePolicy` sets the edge policy of public reads, `edgePurge` purges a write's catalogue tags when granted. */
import type { Context, MiddlewareHandler } from "hono";
import { edgePurgeTags, isShortLivedAtEdge, tagsToPurge } from "../../http/cache-tags";
import type { AppEnv, WriteListener } from "../../http/context";
import { PUBLIC_CACHE_CONTROL } from "../../http/caching";
import type { PurgeBatch, PurgeOutcome } from "./purge-budget";

/** Edge policy of catalogue reads (pets, categories): purged on change; 90 s without a purge, +300 s only while the Worker fails. */
export const EDGE_CACHE_CONTROL = "public, max-age=30, stale-while-revalidate=60, stale-if-error=300";
/** Edge policy of inventory reads: never purged, 10 s old at most, +60 s only while the Worker fails. */
export const EDGE_SHORT_CACHE_CONTROL = "public, max-age=5, stale-while-revalidate=5, stale-if-error=60";

/** Headers about one request and one caller, left off the responses the edge stores. */
const PER_REQUEST_HEADERS = ["X-Request-Id", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"];

/** `ctx.cache` of the Workers runtime (CacheContext in worker-configuration.d.ts). */
export interface PurgeApi {
  purge(options: { tags: string[] }): Promise<{ success: boolean; errors: { code: number; message: string }[] }>;
}

/** The coordinator's RPC surface used by writes (src/runtime/workers/purge-coordinator.ts). */
export interface PurgeCoordinatorApi {
  submit(tags: string[], source: string): Promise<PurgeBatch | null>;
  settle(id: number, outcome: PurgeOutcome): Promise<void>;
}

/** Where a batch goes when the runtime has no `ctx.cache` (local workerd): the batch as recorded. */
export type PurgeFallback = (batch: PurgeBatch) => Promise<void>;

export interface EdgePurgeOptions {
  /** The purge coordinator of this Worker, or undefined where the edge cache is off (previews). */
  coordinator: (c: Context<AppEnv>) => PurgeCoordinatorApi | undefined;
  fallback?: PurgeFallback;
  /** Where purge failures are reported (a line with the request id). */
  log: (line: string) => void;
}

function executionCtxOf(c: Context<AppEnv>): Context["executionCtx"] | undefined {
  try {
    return c.executionCtx;
  } catch {
    return undefined; // no ExecutionContext (app.request in tests)
  }
}

/** Make one purge call for `batch` with `executionCtx`'s `ctx.cache` (or `fallback` without it): "accepted", or "refused" on a refusal or error (logged, never thrown). */
export async function sendPurge(batch: PurgeBatch, executionCtx: unknown, options: Pick<EdgePurgeOptions, "fallback" | "log">): Promise<PurgeOutcome> {
  const api = (executionCtx as { cache?: PurgeApi } | undefined)?.cache;
  try {
    if (api) {
      const result = await api.purge({ tags: batch.tags });
      if (!result.success) throw new Error(result.errors.map((e) => `${e.code} ${e.message}`).join("; ") || "purge refused");
    } else {
      await options.fallback?.(batch);
    }
    return "accepted";
  } catch (error) {
    const sources = batch.parts.map((p) => p.source).join(",");
    options.log(`${sources} cache purge of ${batch.tags.join(",")} failed: ${error instanceof Error ? error.message : String(error)}`);
    return "refused";
  }
}

/** The edge policy of public reads (AppDeps.middleware): `Cloudflare-CDN-Cache-Control` on a public answer, short when it shows inventory. */
export const edgePolicy: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  if (c.res.headers.get("Cache-Control") !== PUBLIC_CACHE_CONTROL) return;
  const short = (c.res.headers.get("Cache-Tag") ?? "").split(",").some(isShortLivedAtEdge);
  c.res.headers.set("Cloudflare-CDN-Cache-Control", short ? EDGE_SHORT_CACHE_CONTROL : EDGE_CACHE_CONTROL);
};

/** The write listener (AppDeps.afterWrite) that hands a write's catalogue tags to the coordinator and purges when granted. */
export function edgePurge(options: EdgePurgeOptions): WriteListener {
  return async (c, committed) => {
    const tags = edgePurgeTags(tagsToPurge(committed));
    const coordinator = tags.length > 0 ? options.coordinator(c) : undefined;
    if (!coordinator) return;
    const requestId = c.get("requestId");
    try {
      const batch = await coordinator.submit(tags, requestId);
      if (!batch) return;
      const executionCtx = executionCtxOf(c);
      const outcome = await sendPurge(batch, executionCtx, options);
      const settled = coordinator.settle(batch.id, outcome).catch((error: unknown) => options.log(`${requestId} purge settle failed: ${String(error)}`));
      if (executionCtx) executionCtx.waitUntil(settled);
      else await settled;
    } catch (error) {
      options.log(`${requestId} purge coordinator failed for ${tags.join(",")}: ${error instanceof Error ? error.message : String(error)}`);
    }
  };
}

/** The app's final response as the edge may store it: one marked for the edge loses its per-request headers (`X-Request-Id`, `RateLimit-*`). */
export function forEdge(response: Response): Response {
  if (!response.headers.has("Cloudflare-CDN-Cache-Control")) return response;
  for (const name of PER_REQUEST_HEADERS) response.headers.delete(name);
  return response;
}
