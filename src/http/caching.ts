/** HTTP caching and conditional requests (RFC 9110 §8.8.3, §13; RFC 9111 §5.2; docs/internals.md#caching-headers-and-etags). */
import { createHash } from "node:crypto";
import type { Context, MiddlewareHandler } from "hono";
import { etag } from "hono/etag";
import type { Precondition } from "../domain/precondition";

export const PUBLIC_CACHE_CONTROL = "public, max-age=0, s-maxage=30, stale-while-revalidate=60";
export const PRIVATE_CACHE_CONTROL = "private, no-store";

/** The cache policy of public reads (see the module docs); errors keep the app's default `no-store`. */
const publicCachePolicy: MiddlewareHandler = async (c, next) => {
  await next();
  if (!(c.res.ok || c.res.status === 304)) return;
  if (c.req.header("Authorization") !== undefined) {
    c.res.headers.set("Cache-Control", PRIVATE_CACHE_CONTROL);
    c.res.headers.delete("Cache-Tag");
    return;
  }
  c.res.headers.set("Cache-Control", PUBLIC_CACHE_CONTROL);
  c.res.headers.append("Vary", "Authorization");
};

/** Headers that describe the body; a 304 has none (RFC 9110 §15.4.5), so they are not carried over. */
export const REPRESENTATION_HEADERS = new Set(["content-type", "content-length", "content-encoding", "content-language", "content-range", "transfer-encoding"]);

/** Hono's etag middleware (strong ETag, `If-None-Match` → 304), except that a 304 keeps every header of the 200 but the representation ones. */
function conditionalGet(): MiddlewareHandler {
  const inner = etag();
  return async (c, next) => {
    let full: Headers | undefined;
    // Only a request with If-None-Match can turn into a 304; others need no copy of the headers.
    const conditional = c.req.header("If-None-Match") !== undefined;
    await inner(c, async () => {
      await next();
      if (conditional) full = new Headers(c.res.headers);
    });
    if (c.res.status !== 304 || !full) return;
    for (const [name, value] of full) {
      if (!REPRESENTATION_HEADERS.has(name) && !c.res.headers.has(name)) c.res.headers.set(name, value);
    }
  };
}

/** Middleware for public GETs: ETag/304 and the shared-cache policy. */
export const publicRead: MiddlewareHandler[] = [publicCachePolicy, conditionalGet()];

/** Middleware for responses that depend on the caller. */
export const privateResponse: MiddlewareHandler = async (c, next) => {
  await next();
  c.res.headers.set("Cache-Control", PRIVATE_CACHE_CONTROL);
};

/** Strong ETag of a JSON representation: `"` + hex SHA-1 of its JSON text + `"`, as Hono's etag middleware computes it from the same body. */
export function representationEtag(representation: unknown): string {
  return `"${createHash("sha1").update(JSON.stringify(representation)).digest("hex")}"`;
}

/** Set the ETag of the JSON `representation` about to be sent (the etag middleware need not hash it) and, for a public read, the `Cache-Tag`s naming what it shows (src/http/cache-tags.ts), so writes purge exactly it; returns `representation`. */
export function withEtag<T>(c: Context, representation: T, cacheTags?: readonly string[]): T {
  if (cacheTags) c.header("Cache-Tag", cacheTags.join(","));
  c.header("ETag", representationEtag(representation));
  return representation;
}

/** The precondition of an `If-Match` header (RFC 9110 §13.1.1), none without it: `*` matches; a list, when one of its strong tags is a current ETag. */
export function ifMatchPrecondition(header: string | undefined): Precondition | undefined {
  if (header === undefined) return undefined;
  if (header.trim() === "*") return { matches: () => true };
  const tags = new Set(header.match(/(?:W\/)?"[^"]*"/g));
  return { matches: (current, alsoCurrent = []) => [current, ...alsoCurrent].some((representation) => tags.has(representationEtag(representation))) };
}

/** Middleware for caller-dependent GETs: ETag/304 for the caller, never stored by shared caches. */
export const privateRead: MiddlewareHandler[] = [privateResponse, conditionalGet()];
