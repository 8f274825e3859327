/** Node's in-process cache of anonymous public 200 `GET`s by path and query, purged by the tags a write made stale (docs/caching.md#the-node-read-cache). */
import type { MiddlewareHandler } from "hono";
import { LRUCache } from "lru-cache";
import { tagsToPurge } from "../../http/cache-tags";
import type { AppEnv, WriteListener } from "../../http/context";
import { PUBLIC_CACHE_CONTROL, REPRESENTATION_HEADERS } from "../../http/caching";
import { matchedRoute } from "../../http/router";
import type { RateLimitDecision } from "../../http/rate-limiter";

/** Bytes counted per entry besides its strings (map slots, arrays, numbers). */
const ENTRY_OVERHEAD = 256;
/** Tags whose purge time is remembered before the oldest are forgotten (see `purgeTags`). */
const MAX_PURGE_MARKS = 50_000;

/** Per-request headers of a complete hit, filled in on each hit. */
const PER_REQUEST = ["x-request-id", "ratelimit-limit", "ratelimit-remaining", "ratelimit-reset", "x-cache"];
/** Headers that are never replayed from the cache. */
const UNCACHED_HEADERS = new Set([...PER_REQUEST, "retry-after", "set-cookie", "content-length"]);

/** Every header of a 200 hit as the client receives it: names sorted as Headers lists them, `PER_REQUEST` ones empty, `Content-Length` last. */
type Complete = Record<string, string>;

interface Entry {
  headers: [string, string][];
  /** The hit the edge answers before the app (./cache-hits.ts): set when its whole header list is known (with `responseHeaders` only). */
  edge?: CompleteHit;
  etag: string | null;
  body: string;
  tags: string[];
}

export interface MemoryReadCacheOptions {
  /** Longest time an entry is served, ms (0 disables the cache). */
  ttlMs: number;
  /** Most bytes of entries kept (default 32 MiB); the least recently used are dropped first. */
  maxBytes?: number;
  /** Clock in ms that entries age by (default performance.now). */
  nowMs?: () => number;
  /** The headers the app sets on a JSON read besides its route's own (src/app.ts `responseHeaders`); without them no hit is complete. */
  responseHeaders?: readonly (readonly [string, string])[];
  /** Other processes' caches on the same database (src/runtime/node/cluster.ts): this one's purges are published to them, theirs applied here. */
  peers?: { publish(tags: string[]): void; subscribe(onPurge: (tags: string[]) => void): void };
}

/** True when `If-None-Match` lists `etag` (weak comparison, RFC 9110 §13.1.2). */
function etagMatches(etag: string, ifNoneMatch: string): boolean {
  if (ifNoneMatch.trim() === "*") return true;
  const expected = etag.replace(/^W\//, "");
  return (ifNoneMatch.match(/"[^"]*"/g) ?? []).some((tag) => tag === expected);
}

/** The header list of a 200 hit: `stored` (the route's), the app's `added` over it, and the per-request names. */
function completeHeaders(stored: readonly [string, string][], added: readonly (readonly [string, string])[], body: string): Complete {
  const all = new Map<string, string>(stored);
  for (const [name, value] of added) all.set(name, value);
  for (const name of PER_REQUEST) all.set(name, "");
  const complete: Complete = {};
  for (const name of [...all.keys()].sort()) complete[name] = all.get(name)!;
  complete["Content-Length"] = String(Buffer.byteLength(body));
  // JSON.parse builds an object with fast properties; one built key by key past a dozen keys is a dictionary, slow to copy on every hit.
  const fast = JSON.parse(JSON.stringify(complete)) as Complete;
  // Its values are copies: put back the strings every entry shares (the app's headers), so each entry holds only its own.
  for (const name of all.keys()) fast[name] = all.get(name)!;
  return fast;
}

/** The media type of a `Content-Type` value, without its parameters. */
const mediaType = (contentType: string | null | undefined) => contentType?.split(";")[0]?.trim();

function sMaxAgeMs(cacheControl: string): number {
  const match = /s-maxage=(\d+)/i.exec(cacheControl);
  return match ? Number(match[1]) * 1000 : Number.POSITIVE_INFINITY;
}

/** The headers of a complete hit for one request: a copy of `complete` with the `PER_REQUEST` names filled in. */
export function hitHeaders(complete: Readonly<Complete>, requestId: string, decision: RateLimitDecision): Complete {
  const headers = { ...complete };
  headers["x-request-id"] = requestId;
  headers["ratelimit-limit"] = String(decision.limit);
  headers["ratelimit-remaining"] = String(decision.remaining);
  headers["ratelimit-reset"] = String(decision.resetSeconds);
  headers["x-cache"] = "HIT";
  return headers;
}

/** A stored 200 whose whole header list is known: `headers` with the per-request names (PER_REQUEST) empty. */
export interface CompleteHit {
  headers: Readonly<Record<string, string>>;
  body: string;
  /** The route template that answered it (`/pets/:petId`), for the log line and metrics of a hit. */
  route: string | null;
}

export interface MemoryReadCache {
  /** The middleware; install after authentication and rate limiting (AppDeps.middleware). */
  middleware: MiddlewareHandler<AppEnv>;
  /** Drops what a write's committed events made stale, here and at `peers` (AppDeps.afterWrite). */
  purge: WriteListener;
  /** The fresh stored answer to an anonymous `GET` of `key` (path and query, as the app sees them), when its header list is complete. */
  completeHit(key: string): CompleteHit | undefined;
}

/** The cache: its middleware and its hits. */
export function memoryReadCache(options: MemoryReadCacheOptions): MemoryReadCache {
  const { ttlMs, maxBytes = 32 * 1024 * 1024, nowMs = () => performance.now(), peers, responseHeaders } = options;
  // The app's headers are those of a JSON answer: they complete entries of the same media type.
  const addedType = mediaType(responseHeaders?.find(([name]) => name === "content-type")?.[1]);
  const keysByTag = new Map<string, Set<string>>();
  const entries = new LRUCache<string, Entry>({
    maxSize: maxBytes,
    // Read the clock at every check: lru-cache otherwise keeps the time for 1 ms, which hides a test clock's moves.
    ttlResolution: 0,
    perf: { now: nowMs },
    onInsert: (entry, key) => {
      for (const tag of entry.tags) keysByTag.set(tag, (keysByTag.get(tag) ?? new Set()).add(key));
    },
    // Evicted, expired, replaced or purged.
    dispose: (entry, key) => {
      for (const tag of entry.tags) {
        const keys = keysByTag.get(tag);
        keys?.delete(key);
        if (keys?.size === 0) keysByTag.delete(tag);
      }
    },
  });
  /** Purge sequence: incremented by every purge; `purgedAt` holds the last one per tag. */
  let sequence = 0;
  const purgedAt = new Map<string, number>();
  /** Reads that started before this sequence never store (purge marks were forgotten). */
  let floor = 0;

  const purgeTags = (tags: string[]) => {
    sequence += 1;
    if (purgedAt.size + tags.length > MAX_PURGE_MARKS) {
      purgedAt.clear();
      floor = sequence;
    }
    for (const tag of tags) {
      purgedAt.set(tag, sequence);
      for (const key of keysByTag.get(tag) ?? []) entries.delete(key);
    }
  };

  peers?.subscribe(purgeTags);

  const completeHit = (key: string) => entries.get(key)?.edge;

  const middleware: MiddlewareHandler<AppEnv> = async (c, next) => {
    const method = c.req.method;
    if (ttlMs <= 0 || method !== "GET" || c.req.header("Authorization") !== undefined) return next();

    const url = c.req.url;
    const key = url.slice(url.indexOf("/", url.indexOf("//") + 2));
    const readAt = nowMs();
    const hit = entries.get(key);
    if (hit) {
      c.set("cache", "HIT");
      const ifNoneMatch = c.req.header("If-None-Match");
      const notModified = Boolean(ifNoneMatch && hit.etag && etagMatches(hit.etag, ifNoneMatch));
      for (const [name, value] of hit.headers) if (!notModified || !REPRESENTATION_HEADERS.has(name)) c.header(name, value);
      c.header("X-Cache", "HIT");
      return notModified ? c.body(null, 304) : c.body(hit.body, 200);
    }

    const startedAt = sequence;
    await next();
    const res = c.res;
    const cacheControl = res.headers.get("Cache-Control");
    const tagHeader = res.headers.get("Cache-Tag");
    if (res.status !== 200 || !tagHeader || cacheControl !== PUBLIC_CACHE_CONTROL) return;
    const tags = tagHeader.split(",");
    if (startedAt < floor || tags.some((tag) => (purgedAt.get(tag) ?? 0) > startedAt)) return;
    const headers: [string, string][] = [];
    let size = ENTRY_OVERHEAD + key.length * 2;
    res.headers.forEach((value, name) => {
      if (UNCACHED_HEADERS.has(name)) return;
      headers.push([name, value]);
      size += name.length + value.length;
    });
    const body = await res.clone().text();
    size += body.length;
    const complete = responseHeaders && mediaType(res.headers.get("Content-Type")) === addedType ? completeHeaders(headers, responseHeaders, body) : undefined;
    if (complete) for (const name in complete) size += name.length + complete[name]!.length;
    // An entry larger than maxBytes is not stored (lru-cache's maxEntrySize); a ttl of 0 would mean no expiry.
    const ttl = Math.min(ttlMs, sMaxAgeMs(cacheControl));
    const edge = complete && { headers: complete, body, route: matchedRoute(c)?.path ?? null };
    if (ttl > 0) entries.set(key, { headers, edge, etag: res.headers.get("ETag"), body, tags }, { ttl, start: readAt, size });
    res.headers.set("X-Cache", "MISS");
    c.set("cache", "MISS");
  };
  const purge: WriteListener = (_c, committed) => {
    if (ttlMs <= 0) return;
    const tags = tagsToPurge(committed);
    purgeTags(tags);
    peers?.publish(tags);
  };
  return { middleware, purge, completeHit };
}
