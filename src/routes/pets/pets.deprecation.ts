/** Deprecation of GET /pets/{petId}: `Deprecation` (RFC 9745), `Sunset` (RFC 8594), successor `Link` (RFC 8288), then 410 `endpoint_sunset`. */
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../../http/context";
import { ApiError } from "../../http/errors";

/** Middleware stamping deprecation headers on every response of the route. */
export const deprecatedPetRead = createMiddleware<AppEnv>(async (c, next) => {
  const { petsGetDeprecatedAt, petsGetSunsetAt } = c.get("config");
  const petId = c.req.param("petId") ?? "";
  const headers = {
    Deprecation: `@${Math.floor(petsGetDeprecatedAt.getTime() / 1000)}`,
    Sunset: petsGetSunsetAt.toUTCString(),
    Link: `</pets?id=${encodeURIComponent(petId)}>; rel="successor-version"`,
  };
  if (c.get("now")().getTime() >= petsGetSunsetAt.getTime()) {
    throw new ApiError(410, "endpoint_sunset", `GET /pets/{petId} was retired on ${headers.Sunset}; use GET /pets?id=${petId}.`, undefined, headers);
  }
  await next();
  for (const [name, value] of Object.entries(headers)) c.res.headers.set(name, value);
});
