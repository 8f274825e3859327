/**
 * Edge caching of public reads in the Worker (API.md §7), with the Workers
 * Cache API (`caches.default`, one cache per Cloudflare location).
 *
 * What is cached: `GET` requests without an `Authorization` header whose
 * response is `200` with a `Cache-Control` that says `public` (and not
 * `private` / `no-store` / `no-cache`). The entry lives as long as that header
 * allows a shared cache (`s-maxage=30` for the catalogue, RFC 9111 §5.2.2.10),
 * which also bounds staleness in every other location. Responses to requests
 * that carry a key, and private responses, are never stored.
 *
 * Only the catalogue is cached: reads of `/pets…`, `/categories…` and
 * `/store/inventory…`. Other public responses (the OpenAPI document, the docs
 * page) are computed once per isolate and change with each deployment, so they
 * are left to their own `Cache-Control` (`X-Cache: BYPASS`).
 *
 * Purging — generation keys: every cached read belongs to a group (`pets`,
 * `categories`, `inventory`). Each group has a generation token stored in the same cache
 * under `/__edge-cache/generation/<group>`, and entries are keyed by
 * `<request URL> + generation`. A successful write (`POST/PUT/PATCH/DELETE`,
 * 2xx) replaces the token of every group it can change (see `WRITE_EFFECTS`)
 * before its response is sent, so every entry of those groups in this location
 * — item pages, filtered lists, every page of a cursor — is unreachable at
 * once, whichever isolate stored it. A read that raced with the write can only
 * store under the old token, never resurrect stale data. A generation record
 * that the cache evicts is simply re-created, which purges its group: eviction
 * errs on the side of freshness.
 *
 * Observable: `X-Cache: HIT` (served from the cache), `MISS` (stored now),
 * `BYPASS` (a GET that is not cached: a key was sent, the path is not part of
 * the catalogue, or the response is not public). On a hit `If-None-Match` is answered with 304 like the app does.
 *
 * Installed by src/worker.ts after authentication and rate limiting, so cached
 * reads still count against the caller's limit and carry fresh `RateLimit-*`
 * and `X-Request-Id` headers (those are never stored). Note: the Cache API is
 * a no-op on `*.workers.dev` hosts; it takes effect on a custom domain.
 */
import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv } from "../lib/context";
import { REPRESENTATION_HEADERS } from "../lib/http-cache";

/** The part of the Workers `Cache` interface this module uses. */
export interface EdgeCacheStore {
  match(request: Request): Promise<Response | undefined>;
  put(request: Request, response: Response): Promise<void>;
}

/** Groups of public reads that writes can change. */
export type CacheGroup = "pets" | "categories" | "inventory";
const ALL_GROUPS: readonly CacheGroup[] = ["pets", "categories", "inventory"];

/**
 * Which groups a successful write under a path prefix can change (first match
 * wins). A pet embeds its category and its inventory row shows its status;
 * orders and inventory changes move stock and pet status (API.md §3).
 * Writes under any other path purge every group, so a new route is safe by
 * default until it is listed here.
 */
export const WRITE_EFFECTS: ReadonlyArray<readonly [prefix: string, groups: readonly CacheGroup[]]> = [
  ["/pets", ["pets", "inventory"]],
  ["/categories", ["categories", "pets", "inventory"]],
  ["/store/inventory", ["inventory", "pets"]],
  ["/store/orders", ["inventory", "pets"]],
  // Private resources: nothing public depends on them.
  ["/accounts", []],
  ["/webhooks", []],
  ["/events", []],
];

/** The group of a public read, by path; undefined for paths that are not cached. */
export function readGroup(pathname: string): CacheGroup | undefined {
  if (pathname === "/pets" || pathname.startsWith("/pets/")) return "pets";
  if (pathname === "/categories" || pathname.startsWith("/categories/")) return "categories";
  if (pathname === "/store/inventory" || pathname.startsWith("/store/inventory/")) return "inventory";
  return undefined;
}

/** The groups a successful write to `pathname` makes stale. */
export function writeGroups(pathname: string): readonly CacheGroup[] {
  for (const [prefix, groups] of WRITE_EFFECTS) {
    if (pathname === prefix || pathname.startsWith(`${prefix}/`)) return groups;
  }
  return ALL_GROUPS;
}

const WRITE_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);
/** Per-request headers that must not be replayed from the cache. */
export const UNCACHED_HEADERS = new Set(["x-request-id", "ratelimit-limit", "ratelimit-remaining", "ratelimit-reset", "retry-after", "set-cookie", "x-cache"]);
const GENERATION_PATH = "/__edge-cache/generation/";
/** How long a generation record may live, seconds (its loss only purges its group). */
const GENERATION_TTL_SECONDS = 86_400;

/** True when `Cache-Control` lets a shared cache store the response. */
export function isPubliclyCacheable(cacheControl: string | null): boolean {
  if (!cacheControl) return false;
  const directives = cacheControl.toLowerCase().split(",").map((d) => d.trim().split("=")[0]);
  return directives.includes("public") && !directives.some((d) => d === "private" || d === "no-store" || d === "no-cache");
}

/** True when `If-None-Match` lists `etag` (weak comparison, RFC 9110 §13.1.2). */
export function etagMatches(etag: string, ifNoneMatch: string): boolean {
  if (ifNoneMatch.trim() === "*") return true;
  const expected = etag.replace(/^W\//, "");
  return (ifNoneMatch.match(/"[^"]*"/g) ?? []).some((tag) => tag === expected);
}

function defaultStore(): EdgeCacheStore | undefined {
  return (globalThis as { caches?: { default?: EdgeCacheStore } }).caches?.default;
}

/** Run `work` after the response when the runtime allows it, else now. */
async function inBackground(c: Context<AppEnv>, work: Promise<unknown>): Promise<void> {
  let ctx: { waitUntil(p: Promise<unknown>): void } | undefined;
  try {
    ctx = c.executionCtx;
  } catch {
    ctx = undefined; // no ExecutionContext (Node, app.request)
  }
  const guarded = work.catch(() => undefined); // a failed cache write only costs a miss
  if (ctx) ctx.waitUntil(guarded);
  else await guarded;
}

export interface EdgeCacheOptions {
  /** The cache; default `caches.default` (Workers). When absent the middleware does nothing. */
  store?: () => EdgeCacheStore | undefined;
}

/**
 * The edge cache middleware (see the module comment for the strategy).
 * Install after authentication and rate limiting, before the routes.
 */
export function edgeCache(options: EdgeCacheOptions = {}): MiddlewareHandler<AppEnv> {
  const storeOf = options.store ?? defaultStore;

  const generationKey = (origin: string, group: CacheGroup) => new Request(`${origin}${GENERATION_PATH}${group}`);

  /** The current generation token of `group`, creating one when there is none. */
  async function currentGeneration(c: Context<AppEnv>, store: EdgeCacheStore, origin: string, group: CacheGroup): Promise<string> {
    const record = await store.match(generationKey(origin, group));
    if (record) return record.text();
    return bumpGeneration(c, store, origin, group, false);
  }

  /** Replace the generation token of `group` (awaited when `wait`, so the purge precedes the response). */
  async function bumpGeneration(c: Context<AppEnv>, store: EdgeCacheStore, origin: string, group: CacheGroup, wait: boolean): Promise<string> {
    const token = crypto.randomUUID();
    const record = new Response(token, {
      headers: { "Content-Type": "text/plain", "Cache-Control": `public, max-age=${GENERATION_TTL_SECONDS}` },
    });
    const put = store.put(generationKey(origin, group), record);
    if (wait) await put;
    else await inBackground(c, put);
    return token;
  }

  return async (c, next) => {
    const store = storeOf();
    const method = c.req.method;
    if (!store || (method !== "GET" && !WRITE_METHODS.has(method))) return next();
    const url = new URL(c.req.url);

    if (WRITE_METHODS.has(method)) {
      await next();
      if (c.res.status >= 200 && c.res.status < 300) {
        const groups = writeGroups(url.pathname);
        // Awaited: the client's next read in this location must not see the old data.
        await Promise.all(groups.map((g) => bumpGeneration(c, store, url.origin, g, true).catch(() => undefined)));
      }
      return;
    }

    const group = readGroup(url.pathname);
    if (group === undefined || c.req.header("Authorization") !== undefined) {
      await next();
      c.header("X-Cache", "BYPASS");
      return;
    }

    const generation = await currentGeneration(c, store, url.origin, group).catch(() => null);
    if (generation === null) return next(); // cache unavailable: serve uncached
    const key = new Request(`${url.origin}${url.pathname}${url.search}${url.search ? "&" : "?"}__edge_generation=${generation}`);

    const hit = await store.match(key).catch(() => undefined);
    if (hit) {
      const headers: Record<string, string> = {};
      hit.headers.forEach((value, name) => {
        if (!UNCACHED_HEADERS.has(name)) headers[name] = value;
      });
      headers["X-Cache"] = "HIT";
      const ifNoneMatch = c.req.header("If-None-Match");
      const etag = hit.headers.get("ETag");
      if (ifNoneMatch && etag && etagMatches(etag, ifNoneMatch)) {
        await hit.body?.cancel();
        const kept = Object.fromEntries(Object.entries(headers).filter(([n]) => !REPRESENTATION_HEADERS.has(n.toLowerCase())));
        return c.body(null, 304, kept);
      }
      return hit.body ? c.body(hit.body, hit.status as 200, headers) : c.body(null, hit.status as 200, headers);
    }

    await next();
    const res = c.res;
    if (res.status === 200 && isPubliclyCacheable(res.headers.get("Cache-Control"))) {
      const copy = new Response(res.clone().body, res);
      for (const name of UNCACHED_HEADERS) copy.headers.delete(name);
      await inBackground(c, store.put(key, copy));
      c.header("X-Cache", "MISS");
    } else {
      c.header("X-Cache", "BYPASS");
    }
  };
}
