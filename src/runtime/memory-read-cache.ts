/**
 * In-process cache of public reads for the Node server: the Node counterpart
 * of the Worker's edge cache (src/runtime/edge-cache.ts), with the same rules
 * of what is cached and what a write makes stale (`readGroup`, `writeGroups`,
 * `isPubliclyCacheable`).
 *
 * Cached: anonymous `GET`s answered 200 with a public `Cache-Control`, keyed by
 * path and query, for at most `ttlMs` (and never longer than the response's
 * `s-maxage`). A successful write through this process bumps the generation of
 * every group it can change before its response is sent, so the next read sees
 * the change; a read records the generation it started under, so a read that
 * raced with a write can never store stale data under the new generation.
 * Writes by other processes on the same database file (e.g. `npm run seed`)
 * show after at most `ttlMs`, well within the `s-maxage=30` the API already
 * grants shared caches (API.md §7). Hits still pass authentication and rate
 * limiting (installed after them) and get a fresh `X-Request-Id`.
 * `X-Cache: HIT | MISS` tells what happened.
 */
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../lib/context";
import { REPRESENTATION_HEADERS } from "../lib/http-cache";
import { etagMatches, isPubliclyCacheable, readGroup, UNCACHED_HEADERS, writeGroups, type CacheGroup } from "./edge-cache";

interface Entry {
  generation: number;
  expiresAt: number;
  headers: [string, string][];
  etag: string | null;
  body: string;
}


export interface MemoryReadCacheOptions {
  /** Longest time an entry is served, ms (0 disables the cache). */
  ttlMs: number;
  /** Most entries kept; the oldest are dropped first. */
  maxEntries?: number;
  /** Clock in ms (default Date.now). */
  nowMs?: () => number;
}

function sMaxAgeMs(cacheControl: string): number {
  const match = /s-maxage=(\d+)/i.exec(cacheControl);
  return match ? Number(match[1]) * 1000 : Number.POSITIVE_INFINITY;
}

/** The middleware; install after authentication and rate limiting (AppDeps.middleware). */
export function memoryReadCache(options: MemoryReadCacheOptions): MiddlewareHandler<AppEnv> {
  const { ttlMs, maxEntries = 5000, nowMs = Date.now } = options;
  const entries = new Map<string, Entry>();
  const generations: Record<CacheGroup, number> = { pets: 0, categories: 0, inventory: 0 };

  return async (c, next) => {
    const method = c.req.method;
    if (ttlMs <= 0 || method === "HEAD" || method === "OPTIONS") return next();
    if (method !== "GET") {
      await next();
      if (c.res.status >= 200 && c.res.status < 300) {
        for (const group of writeGroups(c.req.path)) generations[group] += 1;
      }
      return;
    }
    const group = readGroup(c.req.path);
    if (group === undefined || c.req.header("Authorization") !== undefined) return next();

    const url = c.req.url;
    const key = url.slice(url.indexOf("/", url.indexOf("//") + 2));
    const generation = generations[group];
    const now = nowMs();
    const hit = entries.get(key);
    if (hit && hit.generation === generation && hit.expiresAt > now) {
      const ifNoneMatch = c.req.header("If-None-Match");
      if (ifNoneMatch && hit.etag && etagMatches(hit.etag, ifNoneMatch)) {
        for (const [name, value] of hit.headers) if (!REPRESENTATION_HEADERS.has(name)) c.header(name, value);
        c.header("X-Cache", "HIT");
        return c.body(null, 304);
      }
      for (const [name, value] of hit.headers) c.header(name, value);
      c.header("X-Cache", "HIT");
      return c.body(hit.body, 200);
    }
    if (hit) entries.delete(key);

    await next();
    const res = c.res;
    const cacheControl = res.headers.get("Cache-Control");
    if (res.status !== 200 || !isPubliclyCacheable(cacheControl)) return;
    const headers: [string, string][] = [];
    res.headers.forEach((value, name) => {
      // Per-request headers are never replayed; the length follows from the stored body.
      if (!UNCACHED_HEADERS.has(name) && name !== "content-length") headers.push([name, value]);
    });
    const body = await res.clone().text();
    if (entries.size >= maxEntries) entries.delete(entries.keys().next().value!);
    entries.set(key, { generation, expiresAt: now + Math.min(ttlMs, sMaxAgeMs(cacheControl!)), headers, etag: res.headers.get("ETag"), body });
    res.headers.set("X-Cache", "MISS");
  };
}
