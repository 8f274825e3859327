/**
 * Bearer-key authentication and role checks (RFC 6750, API.md §4).
 * Placeholder until the accounts issue lands: lets every request through.
 */
import type { MiddlewareHandler } from "hono";
import type { Role } from "../db/schema";

/** Require a valid key whose account has one of `roles`. */
export function requireRole(..._roles: Role[]): MiddlewareHandler {
  return async (_c, next) => {
    await next();
  };
}
