/** Validation failures, and strings that are not Unicode text, as 400 `validation_error` (docs/api.md#request-bodies-and-text). */
import { z, type Hook } from "@hono/zod-openapi";
import type { AppEnv } from "./context";
import { ApiError, type ErrorDetail } from "./errors";

const EXPECTED: Record<string, string> = {
  number: "a number",
  int: "an integer",
  string: "a string",
  boolean: "true or false",
  object: "an object",
  array: "an array",
  null: "null",
};

const FORMATS: Record<string, string> = {
  email: "an email address",
  url: "an absolute URL",
  datetime: "an RFC 3339 date-time with an offset, e.g. 2026-12-01T10:00:00Z",
  date: "an RFC 3339 date, e.g. 2026-12-01",
  uuid: "a UUID",
};

function received(input: unknown): string {
  if (input === null) return "null";
  if (Array.isArray(input)) return "an array";
  return typeof input === "object" ? "an object" : typeof input;
}

/** The names an object schema allows (its shape's keys), from the issue's schema instance. */
function allowedKeys(inst: unknown): string[] {
  const shape = (inst as { _zod?: { def?: { shape?: Record<string, unknown> } } } | undefined)?._zod?.def?.shape;
  return shape ? Object.keys(shape) : [];
}

/** The message of a Zod issue without one of its own (Zod's global error map): the field and what it accepts, e.g. "quantity must be at least 1.". */
export function fieldMessage(issue: z.core.$ZodRawIssue): string {
  // "quantity", "events[0]": the last named field, with the index of an array item.
  const path = issue.path ?? [];
  let last = path.length - 1;
  while (last >= 0 && typeof path[last] !== "string") last -= 1;
  const [name, ...indices] = last < 0 ? [] : path.slice(last);
  const field = name === undefined ? "The value" : `${String(name)}${indices.map((i) => `[${String(i)}]`).join("")}`;
  const size = (n: number | bigint | undefined, unit: string) => `${n} ${unit}${Number(n) === 1 ? "" : "s"}`;
  switch (issue.code) {
    case "invalid_type": {
      const expected = EXPECTED[issue.expected ?? ""] ?? issue.expected ?? "a valid value";
      if (issue.input === undefined) return `${field} is required (${expected}).`;
      // JSON numbers past the double range (1e400) parse to ±Infinity, which is a number, but not a finite one.
      if (typeof issue.input === "number" && !Number.isFinite(issue.input)) return `${field} must be a finite number.`;
      if (issue.expected === "int" && typeof issue.input === "number") return `${field} must be an integer.`;
      return `${field} must be ${expected}, not ${received(issue.input)}.`;
    }
    case "too_small": {
      const at = issue.inclusive === false ? "more than" : "at least";
      if (issue.origin === "string")
        return Number(issue.minimum) === 1 ? `${field} must not be empty.` : `${field} must be ${at} ${size(issue.minimum, "character")} long.`;
      if (issue.origin === "array" || issue.origin === "set") return `${field} must have ${at} ${size(issue.minimum, "item")}.`;
      return `${field} must be ${issue.inclusive === false ? "greater than" : "at least"} ${issue.minimum}.`;
    }
    case "too_big": {
      const at = issue.inclusive === false ? "fewer than" : "at most";
      if (issue.origin === "string") return `${field} must be ${at} ${size(issue.maximum, "character")} long.`;
      if (issue.origin === "array" || issue.origin === "set") return `${field} must have ${at} ${size(issue.maximum, "item")}.`;
      return `${field} must be ${issue.inclusive === false ? "less than" : "at most"} ${issue.maximum}.`;
    }
    case "invalid_format":
      return `${field} must be ${FORMATS[issue.format ?? ""] ?? `in the ${issue.format} format`}.`;
    case "invalid_value":
      return `${field} must be one of: ${(issue.values ?? []).map((v) => JSON.stringify(v)).join(", ")}.`;
    case "not_multiple_of":
      return `${field} must be a multiple of ${issue.divisor}.`;
    case "unrecognized_keys": {
      const allowed = allowedKeys(issue.inst);
      return `Unknown field; allowed: ${allowed.length > 0 ? allowed.join(", ") : "none"}.`;
    }
    default:
      return `${field} is not valid.`;
  }
}

z.config({ customError: fieldMessage });

/** The first segment of a detail's path by validation target, where it differs from the target's name (query, header, cookie). */
const TARGET_PREFIX: Record<string, string> = {
  json: "body",
  form: "body",
  param: "path",
};

/** Dotted detail rows for Zod issues, one per fault (the same row twice is one: `.int()` and `.max()` both refuse 2^53); unrecognised keys get one row each. */
export function issuesToDetails(target: string, issues: readonly z.core.$ZodIssue[]): ErrorDetail[] {
  const prefix = TARGET_PREFIX[target] ?? target;
  const details = new Map<string, ErrorDetail>();
  const push = (detail: ErrorDetail) => details.set(`${detail.path}\n${detail.message}`, detail);
  for (const issue of issues) {
    const base = [prefix, ...issue.path.map(String)];
    if (issue.code === "unrecognized_keys" && issue.keys) {
      // Queries, headers, path: "parameter"; bodies: "field".
      const message = prefix === "body" ? issue.message : issue.message.replace(/^Unknown field/, "Unknown parameter");
      for (const key of issue.keys) push({ path: [...base, key].join("."), message });
    } else {
      push({ path: base.join("."), message: issue.message });
    }
  }
  return [...details.values()];
}

/** A NUL (U+0000) or a lone surrogate (with the `u` flag a well-formed pair is one code point, not in `Cs`). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching NUL is the point (it is refused as text).
const NOT_TEXT = /[\u0000\p{Cs}]/u;

/** Detail rows for every string in `value` (through arrays and plain objects) that holds a NUL or a lone surrogate. */
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

/** The app-wide `defaultHook`: 400 `validation_error` for schema failures and for text that is not Unicode text (the parsed value, or the input on failure). */
export const validationHook: Hook<unknown, AppEnv, string, unknown> = (result) => {
  const target = (result as { target?: string }).target ?? "request";
  const details = invalidTextDetails(target, (result as { data?: unknown }).data);
  if (!result.success) details.unshift(...issuesToDetails(target, result.error.issues));
  if (details.length > 0) throw new ApiError(400, "validation_error", "The request is invalid; see details.", details);
};
