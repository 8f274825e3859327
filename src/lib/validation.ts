/**
 * Turns Zod validation failures into the API's 400 `validation_error`
 * (API.md §1: strict bodies and queries naming each offending path), and
 * rejects text that is not Unicode text in every validated input (bodies,
 * queries, path parameters, headers; API.md §2).
 */
import type { Hook } from "@hono/zod-openapi";
import { ApiError, type ErrorDetail } from "./errors";

const TARGET_PREFIX: Record<string, string> = {
  json: "body",
  query: "query",
  param: "path",
  header: "header",
  cookie: "cookie",
  form: "body",
};

interface IssueLike {
  path: PropertyKey[];
  message: string;
  code?: string;
  keys?: string[];
}

/** Dotted detail rows for Zod issues; unrecognised keys get one row each. */
export function issuesToDetails(target: string, issues: readonly IssueLike[]): ErrorDetail[] {
  const prefix = TARGET_PREFIX[target] ?? target;
  const details: ErrorDetail[] = [];
  for (const issue of issues) {
    const base = [prefix, ...issue.path.map(String)];
    if (issue.code === "unrecognized_keys" && issue.keys) {
      for (const key of issue.keys) details.push({ path: [...base, key].join("."), message: "Unknown field." });
    } else {
      details.push({ path: base.join("."), message: issue.message });
    }
  }
  return details;
}

/**
 * A NUL (U+0000) or a surrogate code unit that is not part of a pair. With the
 * `u` flag a well-formed pair is one code point (not in `Cs`), so only lone
 * surrogates match `\p{Cs}`.
 */
const NOT_TEXT = /[\u0000\p{Cs}]/u;

/**
 * Detail rows for every string in `value` (walked through arrays and plain
 * objects) that holds a NUL or a lone surrogate: API.md §2 says text fields are
 * Unicode text. Such strings cannot be stored faithfully (SQLite's C strings
 * end at a NUL, so "a\u0000b" was stored as "a"; sqld refuses a lone surrogate
 * as invalid UTF-8, which became a 503), so they are refused up front, on both
 * runtimes alike.
 */
export function invalidTextDetails(target: string, value: unknown, path: string[] = []): ErrorDetail[] {
  if (typeof value === "string") {
    if (!NOT_TEXT.test(value)) return [];
    return [{ path: [TARGET_PREFIX[target] ?? target, ...path].join("."), message: "Text must not contain NUL (U+0000) or unpaired surrogates." }];
  }
  if (Array.isArray(value)) return value.flatMap((item, i) => invalidTextDetails(target, item, [...path, String(i)]));
  if (value !== null && typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.entries(value).flatMap(([key, item]) => invalidTextDetails(target, item, [...path, key]));
  }
  return [];
}

/**
 * The app-wide `defaultHook`, called after every validation (success or not):
 * throw 400 `validation_error` with details for schema failures and for text
 * that is not Unicode text (in the parsed value on success, the input as
 * received on failure: zod-validator passes `data` as either).
 */
export const validationHook: Hook<unknown, any, any, unknown> = (result) => {
  const target = (result as { target?: string }).target ?? "request";
  const details = invalidTextDetails(target, (result as { data?: unknown }).data);
  if (!result.success) details.unshift(...issuesToDetails(target, result.error.issues as IssueLike[]));
  if (details.length > 0) throw new ApiError(400, "validation_error", "The request is invalid; see details.", details);
};
