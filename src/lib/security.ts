/**
 * Security marks of operations (OpenAPI `security`, RFC 6750 bearer keys) and
 * the middleware that enforces them, declared together so the document and
 * the behaviour cannot disagree.
 */
import type { MiddlewareHandler } from "hono";
import type { Role } from "../db/schema";
import { requireRole } from "../middleware/auth";

/** Spread into `createRoute({...})` of a public operation. */
export const publicOperation = { security: [] as Record<string, string[]>[] };

/**
 * Spread into `createRoute({...})` of an operation that needs a key with one of
 * `roles`: documents `bearerAuth` and `x-roles`, and enforces both.
 */
export function protectedOperation(...roles: Role[]): {
  security: Record<string, string[]>[];
  "x-roles": Role[];
  middleware: MiddlewareHandler[];
} {
  return { security: [{ bearerAuth: [] }], "x-roles": roles, middleware: [requireRole(...roles)] };
}
