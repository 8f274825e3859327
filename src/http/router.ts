/** Routers (OpenAPIHono) sharing the app's environment, validation hook and strict queries (docs/api.md#lists-and-pagination). */
import { OpenAPIHono, z, type RouteConfig } from "@hono/zod-openapi";
import type { Context } from "hono";
import { matchedRoutes } from "hono/route";
import type { AppEnv } from "./context";
import { validationHook } from "./validation";

/** `route` with a strict query (unknown parameters are 400). @throws Error when the query is not an object schema or no 400 is documented. */
export function withStrictQuery<R extends RouteConfig>(route: R): R {
  if (!("400" in route.responses))
    throw new Error(`${route.method.toUpperCase()} ${route.path}: rejects unknown query parameters, so it must document a 400 response.`);
  const query = route.request?.query ?? z.object({});
  if (!(query instanceof z.ZodObject)) throw new Error(`${route.method.toUpperCase()} ${route.path}: the query must be an object schema.`);
  return { ...route, request: { ...route.request, query: query.strict() } };
}

/** A router whose validation failures are 400 `validation_error` and whose every `.openapi()` route gets a strict query (`withStrictQuery`). */
export function createRouter(): OpenAPIHono<AppEnv> {
  const router = new OpenAPIHono<AppEnv>({ strict: true, defaultHook: validationHook });
  const register = router.openapi;
  router.openapi = ((route: RouteConfig, handler: never, hook?: never) => register(withStrictQuery(route), handler, hook)) as typeof router.openapi;
  return router;
}

/** The template of the route that answered `c` (`/pets/:petId`); undefined when only middleware matched (404, 405). */
export function matchedRoute(c: Context): { path: string } | undefined {
  const path = matchedRoutes(c).at(-1)?.path;
  return path && path !== "*" && path !== "/*" ? { path } : undefined;
}
