/** OpenAPI route definitions of /events (docs/api.md#events-and-webhooks, Events tag, beta). */
import { z } from "@hono/zod-openapi";
import { errorResponses, jsonContent, MAX_ID, optionalParam, paginationQuery, responseHeaders, operations } from "../../http/schemas";
import { protectedOperation } from "../../middleware/security";
import { EventsSchema } from "./events.schemas";

const staff = protectedOperation("staff");

/** `after`: an event id, or 0 for the start of the log. */
const afterQuery = optionalParam(
  z
    .string()
    .regex(/^(0|[1-9][0-9]{0,15})$/, "after must be an event id (a non-negative integer).")
    .transform(Number)
    .refine((n) => n <= MAX_ID, `after must be at most ${MAX_ID}.`),
  "query",
  "after",
  "Return events with a larger id than this one (the last id you processed). Default 0: from the start.",
  { type: "integer", format: "int64", minimum: 0, maximum: MAX_ID, default: 0 },
);

const route = operations(["Events"]);

export const list = route({
  method: "get",
  path: "/events",
  operationId: "listEvents",
  summary: "Read the event log",
  description:
    'Every change to pets, categories, inventory and orders in commit order, each written in the same transaction as the change. Poll with `after` = the last id you processed; `Link: rel="next"` is present while more events exist right now. An event never appears later below an id you have already seen. Events older than the retention period (`EVENT_RETENTION_DAYS`, default 30 days) are deleted: a cursor whose following events were deleted is 410 `cursor_expired` (start again from `after=0`).',
  ...staff,
  "x-stability": "beta",
  request: { query: z.strictObject({ after: afterQuery, limit: paginationQuery.limit }) },
  responses: {
    200: { ...jsonContent(EventsSchema, "The next events (possibly none)."), headers: { Link: responseHeaders.Link } },
    ...errorResponses([400, 401, 403, 429, 500, 503], {
      410: "Events after `after` were deleted by retention (`cursor_expired`); start again from `after=0`.",
    }),
  },
});
