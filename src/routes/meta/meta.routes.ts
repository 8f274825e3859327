/** OpenAPI route definitions of the Meta tag: /health, /openapi.json, /docs. */
import { z } from "@hono/zod-openapi";
import { errorResponses, jsonContent, operations } from "../../http/schemas";
import { publicOperation } from "../../middleware/security";

const route = operations(["Meta"]);

export const HealthSchema = z.object({ status: z.enum(["ok"]).openapi({ example: "ok" }) }).openapi("Health");
const DocumentSchema = z.record(z.string(), z.unknown()).openapi({ type: "object", description: "An OpenAPI 3.0.3 document." });

export const health = route({
  method: "get",
  path: "/health",
  operationId: "getHealth",
  summary: "Health check",
  description: "Checks the database with one query.",
  ...publicOperation,
  responses: {
    200: jsonContent(HealthSchema, "The service and its database are up."),
    ...errorResponses([429, 500], { 400: "An unknown query parameter (`validation_error`).", 503: "The database does not answer (`database_unavailable`)." }),
  },
});

export const openapi = route({
  method: "get",
  path: "/openapi.json",
  operationId: "getOpenApiDocument",
  summary: "This OpenAPI document",
  description: "The OpenAPI 3.0.3 document of every route, generated from the route definitions.",
  ...publicOperation,
  responses: {
    200: jsonContent(DocumentSchema, "The OpenAPI 3.0.3 document of every route."),
    ...errorResponses([429, 500], { 400: "An unknown query parameter (`validation_error`)." }),
  },
});

export const docs = route({
  method: "get",
  path: "/docs",
  operationId: "getApiReference",
  summary: "Interactive API reference",
  description: "An HTML page rendered from /openapi.json; its script is served by this service.",
  ...publicOperation,
  responses: {
    200: { description: "The reference page.", content: { "text/html": { schema: z.string() } } },
    ...errorResponses([429, 500], { 400: "An unknown query parameter (`validation_error`)." }),
  },
});
