/** Keyset pagination over ascending ids (docs/api.md#lists-and-pagination), RFC 8288 `Link` headers; the opaque cursor is base64url of `after:<lastId>`. */
import type { Context } from "hono";
import { ApiError } from "./errors";
import { MAX_ID } from "./schemas";

export const DEFAULT_PAGE_SIZE = 20;

/** Cursor naming the last id of a page. */
export function encodeCursor(lastId: number): string {
  return btoa(`after:${lastId}`).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/**
 * The id after which the requested page starts (0 for the first page).
 * @throws ApiError 400 `validation_error` (path `query.cursor`) for a cursor this API did not issue.
 */
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

/** One page from `limit + 1` fetched rows: the first `limit` and, if more exist, the cursor after the last (`keyOf`: its ascending key, default `id`). */
export function toPage<T>(rows: T[], limit: number, keyOf: (row: T) => number = (row) => (row as { id: number }).id): { items: T[]; nextCursor?: string } {
  if (rows.length <= limit) return { items: rows };
  const items = rows.slice(0, limit);
  return { items, nextCursor: encodeCursor(keyOf(items[items.length - 1]!)) };
}

/** Set `Link: <path?…&cursor=…>; rel="next"` (RFC 8288) when there is a next page. */
export function setNextLink(c: Context, nextCursor: string | undefined): void {
  if (!nextCursor) return;
  const url = new URL(c.req.url);
  url.searchParams.set("cursor", nextCursor);
  c.header("Link", `<${url.pathname}${url.search}>; rel="next"`, { append: true });
}
