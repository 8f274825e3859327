/**
 * Turns Zod validation failures into the API's 400 `validation_error`
 * (API.md §1: strict bodies and queries naming each offending path).
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

/** The app-wide `defaultHook`: throw 400 `validation_error` with details. */
export const validationHook: Hook<unknown, any, any, unknown> = (result) => {
  if (!result.success) {
    const target = (result as { target?: string }).target ?? "request";
    const details = issuesToDetails(target, result.error.issues as IssueLike[]);
    throw new ApiError(400, "validation_error", "The request is invalid; see details.", details);
  }
};
