/** The served OpenAPI 3.0.3 document (docs/api.md#versioning-and-deprecation): info, servers, tags, the bearer scheme and `x-sunset`. */
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AppConfig } from "../config";
import type { AppEnv } from "../http/context";

const DESCRIPTION = `HTTP API of the pet store: pets, categories, orders and inventory.

**Errors.** Every non-2xx response is an Error object \`{code, message, status}\` (plus \`details\` for validation errors and \`requestId\`).

**Authentication.** \`Authorization: Bearer <API_KEY>\` (RFC 6750). Create an account with \`POST /accounts\` to get a customer key; staff keys come from the operators.

**Compatibility policy.** Within 1.x only additive changes are made; clients must ignore unknown fields. Each operation carries \`x-stability\`: \`stable\` never breaks, \`beta\` changes with 30 days' notice, \`experimental\` may change without notice. Deprecated operations carry \`x-sunset\` and answer with \`Deprecation\` and \`Sunset\` headers until that date, then 410 \`endpoint_sunset\`.

**Caching.** Public reads carry a strong \`ETag\` and \`Cache-Control: public, max-age=0, s-maxage=30, stale-while-revalidate=60\`; caller-dependent responses are \`private, no-store\`.`;

const TAGS = [
  { name: "Pets", description: "Pets and the categories that group them." },
  { name: "Store", description: "Orders and inventory." },
  { name: "Accounts", description: "Sign-up, the caller's account and API keys." },
  { name: "Events", description: "The change feed and webhooks." },
  { name: "Meta", description: "Health, this document and its reference page." },
];

/** Build the document for `baseUrl` (the `base_url` server variable's default) and `config` (the sunset of GET /pets/{petId}). */
export function buildOpenApiDocument(app: OpenAPIHono<AppEnv>, config: AppConfig, baseUrl: string): Record<string, unknown> {
  app.openAPIRegistry.registerComponent("securitySchemes", "bearerAuth", {
    type: "http",
    scheme: "bearer",
    description: "An API key `psk_…` (RFC 6750 bearer token).",
  });
  const document = app.getOpenAPIDocument({
    openapi: "3.0.3",
    info: {
      title: "Petstore API",
      version: "1.0.0",
      description: DESCRIPTION,
      contact: { name: "Petstore API team", url: `${baseUrl}/docs` },
      // Proprietary: the terms are those of this reference (Redocly `info-license-strict` wants a URL).
      license: { name: "Proprietary", url: `${baseUrl}/docs` },
    },
    servers: [
      { url: "{base_url}", description: "This deployment.", variables: { base_url: { default: baseUrl, description: "Base URL of the deployment." } } },
    ],
    tags: TAGS,
    "x-tagGroups": [
      { name: "Pets", tags: ["Pets"] },
      { name: "Store", tags: ["Store"] },
      { name: "Platform", tags: ["Accounts", "Events", "Meta"] },
    ],
  } as Parameters<typeof app.getOpenAPIDocument>[0]) as unknown as Record<string, unknown>;
  // The deprecated operation names its sunset instant.
  const getPet = (document.paths as Record<string, Record<string, Record<string, unknown>>>)["/pets/{petId}"]?.get;
  if (getPet) getPet["x-sunset"] = config.petsGetSunsetAt.toISOString();
  return document;
}
