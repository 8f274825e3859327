/**
 * Factory of OpenAPIHono routers sharing the app's environment, validation hook
 * and strict queries.
 */
import { OpenAPIHono, z, type RouteConfig } from "@hono/zod-openapi";
import type { AppEnv } from "./context";
import { validationHook } from "./validation";

/** The query of an operation that declares none: every parameter is unknown. */
const NO_QUERY = z.strictObject({});

/**
 * `route` with a strict query (docs/api.md#lists-and-pagination: unknown query parameters are refused
 * on every operation, naming the allowed ones): none declared →
 * `z.strictObject({})`; a non-strict object schema → the same shape, strict.
 * zod-openapi validates the query first, so an unknown parameter is a 400
 * whatever else the request holds.
 * @throws Error when the query is not an object schema, or when the route
 *   documents no 400 response (the document would hide the refusal).
 */
export function withStrictQuery<R extends RouteConfig>(route: R): R {
  if (!("400" in route.responses))
    throw new Error(`${route.method.toUpperCase()} ${route.path}: rejects unknown query parameters, so it must document a 400 response.`);
  const query = route.request?.query;
  if (query === undefined) return { ...route, request: { ...route.request, query: NO_QUERY } };
  if (!(query instanceof z.ZodObject)) throw new Error(`${route.method.toUpperCase()} ${route.path}: the query must be an object schema.`);
  if (query._zod.def.catchall?._zod.def.type === "never") return route;
  return { ...route, request: { ...route.request, query: query.strict() } };
}

/**
 * A router whose validation failures become 400 `validation_error` and whose
 * every `.openapi()` route has a strict query (`withStrictQuery`), so a route
 * cannot forget it. The route types (`typeof router`, what `hc<AppType>` reads)
 * are those of the definitions as written.
 */
export function createRouter(): OpenAPIHono<AppEnv> {
  const router = new OpenAPIHono<AppEnv>({ strict: true, defaultHook: validationHook });
  const register = router.openapi;
  router.openapi = ((route: RouteConfig, handler: never, hook?: never) => register(withStrictQuery(route), handler, hook)) as typeof router.openapi;
  return router;
}
