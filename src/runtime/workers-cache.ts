/**
 * Workers Cache for the Worker (API.md §7): Cloudflare's tiered cache in front
 * of the Worker (`[cache] enabled = true` in wrangler.toml) serves public reads
 * without running it; this middleware gives that cache what it needs and purges
 * it after writes. Docs: https://developers.cloudflare.com/workers/cache/
 * (configuration, cache keys, purge, limitations).
 *
 * Reads: public responses (src/lib/http-cache.ts) carry `Cache-Control: public,
 * max-age=0, s-maxage=30, stale-while-revalidate=60`, `Vary: Authorization`
 * and a `Cache-Tag`. Cloudflare disables `stale-while-revalidate` when
 * `s-maxage` is present, so the edge gets its own policy in
 * `Cloudflare-CDN-Cache-Control: public, max-age=30, stale-while-revalidate=60`
 * (highest precedence at Cloudflare, stripped before the client). Requests
 * with `Authorization` are answered `private, no-store` and, thanks to the
 * `Vary`, never served a stored anonymous answer. Everything else states
 * `private` or `no-store` and is never stored. A stored response is replayed
 * to every client, so the responses the edge may store go without
 * `X-Request-Id` and `RateLimit-*` (`forEdge`, applied by src/worker.ts to the
 * final response; API.md §5 allows their absence there); a keyed read, an
 * error or a write always carries them.
 *
 * Writes: the request runs in a commit log (src/db/commit-log.ts); the tags its
 * committed outbox events make stale (src/lib/cache-tags.ts) are purged in ONE
 * call, awaited before the response so the writer's next read, wherever it
 * lands, misses the old entry (`ctx.cache.purge` uses Instant Purge, global).
 * A purge failure is logged with the request id and never fails the write (the
 * entries then expire within s-maxage + stale-while-revalidate).
 *
 * Local workerd has no `ctx.cache` (it does not emulate Workers Cache), so it
 * is feature-detected: without it the purge goes to `fallback` (the Worker
 * suite records it), or nowhere.
 */
import type { Context, MiddlewareHandler } from "hono";
import { withCommitLog } from "../db/commit-log";
import { tagsToPurge } from "../lib/cache-tags";
import type { AppEnv } from "../lib/context";
import { PUBLIC_CACHE_CONTROL } from "../lib/http-cache";

/** The edge's own policy for public reads (see the module docs). */
export const EDGE_CACHE_CONTROL = "public, max-age=30, stale-while-revalidate=60";

/** Headers about one request and one caller, left off the responses the edge stores. */
const PER_REQUEST_HEADERS = ["X-Request-Id", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"];

/** `ctx.cache` of the Workers runtime (CacheContext in worker-configuration.d.ts). */
interface PurgeApi {
  purge(options: { tags: string[] }): Promise<{ success: boolean; errors: { code: number; message: string }[] }>;
}

export interface WorkersCacheOptions {
  /** Where purges go when the runtime has no `ctx.cache` (local workerd). */
  fallback?: (purge: { requestId: string; tags: string[] }) => Promise<void>;
  /** Where purge failures are reported (a line with the request id). */
  log: (line: string) => void;
}

function purgeApiOf(c: Context<AppEnv>): PurgeApi | undefined {
  try {
    return (c.executionCtx as { cache?: PurgeApi }).cache;
  } catch {
    return undefined; // no ExecutionContext (app.request in tests)
  }
}

const WRITE_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/** The middleware (see the module docs); install after authentication and rate limiting. */
export function workersCache(options: WorkersCacheOptions): MiddlewareHandler<AppEnv> {
  const purge = async (c: Context<AppEnv>, tags: string[]) => {
    const requestId = c.get("requestId");
    try {
      const api = purgeApiOf(c);
      if (api) {
        const result = await api.purge({ tags });
        if (!result.success) throw new Error(result.errors.map((e) => `${e.code} ${e.message}`).join("; ") || "purge refused");
      } else {
        await options.fallback?.({ requestId, tags });
      }
    } catch (error) {
      options.log(`${requestId} cache purge of ${tags.join(",")} failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  };

  return async (c, next) => {
    if (WRITE_METHODS.has(c.req.method)) {
      const { events, error } = await withCommitLog(next);
      const tags = tagsToPurge(events);
      if (tags.length > 0) await purge(c, tags);
      if (error !== undefined) throw error;
      return;
    }
    await next();
    if (c.res.headers.get("Cache-Control") === PUBLIC_CACHE_CONTROL) c.res.headers.set("Cloudflare-CDN-Cache-Control", EDGE_CACHE_CONTROL);
  };
}

/**
 * The response as the edge may store it: a response marked for the edge
 * (`Cloudflare-CDN-Cache-Control`) is replayed to everyone, so one request's
 * id and one caller's rate-limit budget are taken off it. Call on the app's
 * final response (outer middleware add those headers after the routes).
 */
export function forEdge(response: Response): Response {
  if (!response.headers.has("Cloudflare-CDN-Cache-Control")) return response;
  for (const name of PER_REQUEST_HEADERS) response.headers.delete(name);
  return response;
}
