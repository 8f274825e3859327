/** Reusable OpenAPI/Zod building blocks: the Error component, ids, pagination parameters and response helpers. */
import { createRoute, type RouteConfig, z } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";

/** Largest id the API issues or accepts: 2^53-1, so JSON clients keep precision. */
export const MAX_ID = Number.MAX_SAFE_INTEGER;

/** An id in a JSON body or representation: an integer in 1..`MAX_ID`. */
export const idNumber = z.number().int().min(1).max(MAX_ID).openapi({ format: "int64", example: 1 });

/** An instant in a representation: RFC 3339 text in UTC. */
export const timestamp = z.string().openapi({ format: "date-time", example: "2026-11-21T12:00:00.000Z" });

export const ErrorDetailSchema = z
  .object({ path: z.string().openapi({ example: "body.name" }), message: z.string().openapi({ example: "Too small: expected string to have >=1 characters" }) })
  .openapi("ErrorDetail");

export const ErrorSchema = z
  .object({
    code: z.string().openapi({ description: "Machine-readable, stable snake_case code.", example: "not_found" }),
    message: z.string().openapi({ description: "Human-readable description.", example: "Pet 7 was not found." }),
    status: z.number().int().openapi({ description: "The HTTP status code.", example: 404 }),
    details: z.array(ErrorDetailSchema).optional().openapi({ description: "Offending inputs of a validation error." }),
    requestId: z.string().optional().openapi({ description: "The X-Request-Id of the failed request." }),
  })
  .openapi("Error", { description: "The error envelope of every non-2xx response." });

/** A decimal id string in 1..2^53-1, parsed to a number. Rejects `1.5`, `-1`, `abc`, `01`. */
export function idString(label = "id") {
  return z
    .string()
    .regex(/^[1-9][0-9]{0,15}$/, `${label} must be a positive integer.`)
    .transform(Number)
    .refine((n) => n <= MAX_ID, `${label} must be at most ${MAX_ID}.`);
}

const ID_DOC = { type: "integer", format: "int64", minimum: 1, maximum: MAX_ID, example: 1 } as const;

/** Path parameters object for one id, e.g. `idParams("petId")`. */
export function idParams<K extends string>(name: K) {
  return z.object({ [name]: idString(name).openapi({ param: { name, in: "path", required: true }, ...ID_DOC }) } as { [P in K]: ReturnType<typeof idString> });
}

/** `schema`, optional, as the parameter `name` in the query or a header, documented by `description` and `doc` (OpenAPI keywords beside what Zod derives: its type, bounds, …). */
export function optionalParam<S extends z.ZodType>(schema: S, where: "query" | "header", name: string, description: string, doc: Record<string, unknown> = {}) {
  return schema.optional().openapi({ param: { name, in: where, required: false, description }, ...doc });
}

/** An optional id filter in a query string. */
export function idQuery(name: string, description: string) {
  return optionalParam(idString(name), "query", name, description, ID_DOC);
}

/** A repeatable id filter (`?id=1&id=2`), 1..100 values, parsed to number[]. */
export function idListQuery(name: string, description: string) {
  return z
    .preprocess((v) => (v === undefined || Array.isArray(v) ? v : [v]), z.array(idString(name)).min(1).max(100, `${name} takes at most 100 values.`))
    .optional()
    .openapi({ param: { name, in: "query", required: false, description, style: "form", explode: true }, type: "array", items: ID_DOC, maxItems: 100 });
}

/** `limit` (1..100, default 20) and opaque `cursor` (docs/api.md#lists-and-pagination). */
export const paginationQuery = {
  limit: optionalParam(
    z
      .string()
      .regex(/^[0-9]{1,3}$/, "limit must be an integer from 1 to 100.")
      .transform(Number)
      .refine((n) => n >= 1 && n <= 100, "limit must be an integer from 1 to 100."),
    "query",
    "limit",
    "Page size.",
    { type: "integer", minimum: 1, maximum: 100, default: 20 },
  ),
  cursor: optionalParam(z.string().max(200), "query", "cursor", 'Opaque cursor from the previous page\'s `Link: rel="next"` header.'),
};

/** A boolean query flag written `true` or `false`. */
export function booleanQuery(name: string, description: string) {
  const flag = z.enum(["true", "false"]).transform((v) => v === "true");
  return optionalParam(flag, "query", name, description, { type: "boolean" });
}

/** Middleware that checks the caller's key: only `protectedOperation` and `protectedRead` (src/middleware/security.ts) make it. */
export type KeyChecked = MiddlewareHandler[] & { readonly keyChecked: unique symbol };
/** An operation whose document names roles (`x-roles`) runs key-checking middleware: any other `middleware` does not compile. */
type Marks = { "x-roles"?: never } | { "x-roles": readonly string[]; middleware: KeyChecked };

/** `createRoute` for the operations of `tags`, each `x-stability: stable` unless its config says otherwise (docs/api.md#versioning-and-deprecation). */
export function operations(tags: string[]) {
  return <P extends string, R extends Omit<RouteConfig, "path" | "tags"> & { path: P } & Marks>(config: R) =>
    createRoute({ "x-stability": "stable", ...config, tags });
}

/** `{ description, content: application/json schema }` for a response or request body. */
export function jsonContent<T>(schema: T, description: string) {
  return { description, content: { "application/json": { schema } } };
}

/** A required JSON request body. */
export function jsonBody<T>(schema: T, description: string) {
  return { required: true, ...jsonContent(schema, description) };
}

const DEFAULT_ERROR_TEXT: Record<number, string> = {
  400: "Invalid JSON, parameters or body (`invalid_json`, `validation_error`).",
  401: "Missing, malformed, unknown or revoked API key (`unauthorized`).",
  403: "The key's role may not call this operation (`forbidden`).",
  404: "No such resource (`not_found`).",
  409: "The request conflicts with the current state.",
  410: "The endpoint is past its sunset date (`endpoint_sunset`).",
  412: "`If-Match` does not match the current ETag (`precondition_failed`).",
  413: "The body is larger than 64 KiB (`payload_too_large`).",
  415: "The body is not `application/json`, or has a `Content-Encoding` other than `identity` (`unsupported_media_type`).",
  429: "Too many requests (`rate_limited`); see `Retry-After`.",
  500: "Unexpected error (`internal_error`); quote the requestId.",
  503: "The database is unavailable (`database_unavailable`).",
};

type ErrorResponse = { description: string; content: { "application/json": { schema: typeof ErrorSchema } } };

/** Error responses for `statuses` (default descriptions) and `described`, each status literal in the type for typed clients (`NoInfer`: no widening). */
export function errorResponses<const S extends readonly number[], const D extends Record<number, string> = Record<never, string>>(
  statuses: S,
  described?: D,
): { [K in S[number] | keyof NoInfer<D>]: ErrorResponse } {
  const out: Record<number, ErrorResponse> = {};
  for (const status of statuses) out[status] = jsonContent(ErrorSchema, DEFAULT_ERROR_TEXT[status] ?? "Error.");
  for (const [status, description] of Object.entries(described ?? {})) out[Number(status)] = jsonContent(ErrorSchema, description);
  return out as { [K in S[number] | keyof NoInfer<D>]: ErrorResponse };
}

/** `If-Match` request header (RFC 9110 §13.1.1) guarding a write to `resource`. */
export function ifMatchHeaders(resource: string, whereToGetIt = "its GET or the response of the last PUT/PATCH") {
  const description = `Apply only if the ${resource}'s ETag still matches (RFC 9110 §13.1.1): the ETag of ${whereToGetIt}.`;
  return z.object({ "if-match": optionalParam(z.string(), "header", "if-match", description) });
}

/** The doc of a response header with a string value. */
const stringHeader = (description: string) => ({ description, schema: { type: "string" as const } });

/** Response header docs shared by many operations. */
export const responseHeaders = {
  ETag: stringHeader("Strong entity tag of the representation (RFC 9110 §8.8.3)."),
  Link: stringHeader('The next page, `rel="next"` (RFC 8288).'),
  Location: stringHeader("URL of the created resource."),
};

/** The 200 of a conditional write (PUT/PATCH): the new representation and its `ETag`, for `If-Match` next time (RFC 9110 §8.8.3). */
export function updatedContent<T>(schema: T, description: string) {
  const etag = stringHeader("Strong entity tag of the new representation (RFC 9110 §8.8.3): send it as `If-Match` with the next write.");
  return { ...jsonContent(schema, description), headers: { ETag: etag } };
}

/** A conditional GET's 200 (`schema` as JSON with its `ETag` and `headers`) and its 304 (If-None-Match). */
export function readResponses<T>(schema: T, description: string, headers: Record<string, (typeof responseHeaders)["Link"]> = {}) {
  return {
    200: { ...jsonContent(schema, description), headers: { ETag: responseHeaders.ETag, ...headers } },
    304: { description: "Not modified: If-None-Match matched the current ETag." },
  };
}

/** `Idempotency-Key` request header of an authenticated POST (docs/api.md#idempotency-key). */
export const idempotencyKeyHeaders = z.object({
  "idempotency-key": optionalParam(
    z.string().min(1).max(255),
    "header",
    "idempotency-key",
    "A unique key per intended operation (≤ 255 characters): the same key and body within 24 h replays the first response with `Idempotent-Replayed: true`; another body is 422 `idempotency_key_reused`; while the first request runs, the key is 409 `concurrent_update` on every endpoint. Only POST /pets, /categories, /store/orders, /accounts/me/keys and /webhooks honour it: any other write refuses it (400 `validation_error`).",
  ),
});

/** Response header of a replayed POST. */
export const idempotentReplayedHeader = {
  "Idempotent-Replayed": stringHeader("`true` when this is the replay of an earlier response to the same Idempotency-Key."),
};

/** The answer of a POST that honours Idempotency-Key: `schema` as JSON, its `Location`, and `Idempotent-Replayed` on a replay. */
export function createdContent<T>(schema: T, description: string) {
  return { ...jsonContent(schema, description), headers: { Location: responseHeaders.Location, ...idempotentReplayedHeader } };
}
