/**
 * `afterWrites(onWrite)`: app middleware (AppDeps.middleware) that tells a
 * runtime a write succeeded, e.g. to nudge the webhook dispatcher
 * (src/services/webhooks/dispatch.ts) so that deliveries start right after
 * the event was committed.
 */
import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv } from "../lib/context";

/**
 * App middleware (AppDeps.middleware) that calls `onWrite(c)` after every
 * successful write (POST/PUT/PATCH/DELETE answered 2xx), e.g. to nudge the
 * dispatcher so that deliveries start right after the event was committed.
 */
export function afterWrites(onWrite: (c: Context<AppEnv>) => void): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    await next();
    const method = c.req.method;
    if ((method === "POST" || method === "PUT" || method === "PATCH" || method === "DELETE") && c.res.status >= 200 && c.res.status < 300) {
      onWrite(c);
    }
  };
}
