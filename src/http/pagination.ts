/** Keyset pagination over ascending ids (docs/api.md#lists-and-pagination), RFC 8288 `Link` headers; the opaque cursor is base64url of `after:<lastId>`. */
import type { Context } from "hono";
import { ApiError } from "./errors";
import { MAX_ID } from "./schemas";

export const DEFAULT_PAGE_SIZE = 20;

/** Cursor naming the last id of a page. */
export function encodeCursor(lastId: number): string {
  return btoa(`after:${lastId}`).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** The id after which the requested page starts (0: the first). @throws ApiError 400 `validation_error` for a cursor this API did not issue. */
export function decodeCursor(cursor: string | undefined): number {
  if (cursor === undefined) return 0;
  let text = "";
  try {
    text = atob(cursor.replace(/-/g, "+").replace(/_/g, "/"));
  } catch {
    text = "";
  }
  const match = /^after:([1-9][0-9]{0,15})$/.exec(text);
  const id = match ? Number(match[1]) : NaN;
  if (!(id >= 1 && id <= MAX_ID)) {
    throw new ApiError(400, "validation_error", "The request is invalid; see details.", [
      { path: "query.cursor", message: "Unknown cursor; use the Link header of the previous page." },
    ]);
  }
  return id;
}

/** The first `limit` of `rows` (fetched `limit + 1`), setting the next page's `Link` when there are more (`keyOf`: the key, default `id`). */
export function pageOf<T>(c: Context, rows: T[], limit: number, keyOf: (row: T) => number = (row) => (row as { id: number }).id): T[] {
  if (rows.length <= limit) return rows;
  const items = rows.slice(0, limit);
  setNextLink(c, "cursor", encodeCursor(keyOf(items[items.length - 1]!)));
  return items;
}

/** Set `Link: <path?…&name=value>; rel="next"` (RFC 8288). */
export function setNextLink(c: Context, name: string, value: string): void {
  const url = new URL(c.req.url);
  url.searchParams.set(name, value);
  c.header("Link", `<${url.pathname}${url.search}>; rel="next"`, { append: true });
}
