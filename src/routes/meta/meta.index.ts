/** Router of /health, /openapi.json and /docs (docs/api.md#endpoints); the docs page's script is served here, so it needs no outside network. */
import type { OpenAPIHono, RouteHandler } from "@hono/zod-openapi";
import type { ReferenceProps } from "@scalar/api-reference";
import { Scalar } from "@scalar/hono-api-reference";
import type { Context } from "hono";
import { SCALAR_SCRIPT_PATH, type AssetSource } from "../../http/assets";
import { ApiError } from "../../http/errors";
import { createRouter } from "../../http/router";
import type { AppEnv } from "../../http/context";
import { buildOpenApiDocument } from "../../openapi/document";
import * as routes from "./meta.routes";

/** Options of the /docs page, typed by the installed `@scalar/api-reference`: the API's own reference, none of Scalar's hosted services. */
const SCALAR_CONFIGURATION = {
  url: "/openapi.json",
  pageTitle: "Petstore API reference",
  withDefaultFonts: false,
  agent: { disabled: true },
  mcp: { disabled: true },
  showDeveloperTools: "never",
  hideClientButton: true,
  documentDownloadType: "json",
  telemetry: false,
} satisfies NonNullable<ReferenceProps["configuration"]> & { pageTitle: string; withDefaultFonts: boolean };

/** Meta routes of `root` (the whole app, which the document describes); `checkDatabase` rejects when the database cannot serve (503). */
export function createMetaRouter(root: () => OpenAPIHono<AppEnv>, assets: AssetSource | undefined, checkDatabase: (c: Context<AppEnv>) => Promise<void>) {
  const documents = new Map<string, Record<string, unknown>>();

  const health: RouteHandler<typeof routes.health, AppEnv> = async (c) => {
    try {
      await checkDatabase(c);
    } catch {
      throw new ApiError(503, "database_unavailable", "The database does not answer or cannot be written.", undefined, { "Retry-After": "1" });
    }
    c.header("Cache-Control", "no-store");
    return c.json({ status: "ok" as const }, 200);
  };

  const openapi: RouteHandler<typeof routes.openapi, AppEnv> = async (c) => {
    const config = c.get("config");
    const baseUrl = config.publicBaseUrl ?? new URL(c.req.url).origin;
    let document = documents.get(baseUrl);
    if (!document) {
      document = buildOpenApiDocument(root(), config, baseUrl);
      if (documents.size < 16) documents.set(baseUrl, document);
    }
    // Without PUBLIC_BASE_URL the document names the request's origin, which Workers Cache keys ignore: private to the caller.
    c.header("Cache-Control", config.publicBaseUrl ? "public, max-age=300" : "private, max-age=300");
    return c.json(document, 200);
  };

  const router = createRouter()
    .openapi(routes.health, health)
    .openapi(routes.openapi, openapi)
    .openapi(routes.docs, Scalar({ ...SCALAR_CONFIGURATION, cdn: SCALAR_SCRIPT_PATH }) as never);

  router.get(SCALAR_SCRIPT_PATH, async (c) => {
    const res = assets ? await assets(SCALAR_SCRIPT_PATH, c) : null;
    if (!res) throw new ApiError(404, "not_found", "No such asset.");
    return res;
  });
  return router;
}
