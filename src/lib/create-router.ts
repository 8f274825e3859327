/**
 * Factory of OpenAPIHono routers sharing the app's environment and validation hook.
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "./context";
import { validationHook } from "./validation";

/** A router whose validation failures become 400 `validation_error`. */
export function createRouter(): OpenAPIHono<AppEnv> {
  return new OpenAPIHono<AppEnv>({ strict: true, defaultHook: validationHook });
}
