/** Security marks of operations (OpenAPI `security`) with the middleware that enforces them, so the document and the behaviour agree. */
import type { Role } from "../domain/principal";
import { requireRole } from "./auth";
import { strictJson } from "./strict-json";
import type { MiddlewareHandler } from "hono";
import { privateRead, privateResponse, publicRead } from "../http/caching";
import type { KeyChecked } from "../http/schemas";

/** Spread into `createRoute({...})` of a public operation. */
export const publicOperation = { security: [] as Record<string, string[]>[] };

/** `publicOperation` for a GET whose 200 carries an ETag and may be stored by shared caches; `first` runs before the caching middleware. */
export function publicReadOperation(...first: MiddlewareHandler[]) {
  return { ...publicOperation, middleware: [...first, ...publicRead] };
}

type ProtectedMarks = { security: Record<string, string[]>[]; "x-roles": Role[]; middleware: KeyChecked };

/** Spread into `createRoute({...})` of an operation for keys of `roles`: documents and enforces them; every response `private, no-store`. */
export function protectedOperation(...roles: Role[]): ProtectedMarks {
  // Bodies are checked (strict JSON) only once the caller may call the operation: 401/403 first.
  return { security: [{ bearerAuth: [] }], "x-roles": roles, middleware: [privateResponse, requireRole(...roles), strictJson] as KeyChecked };
}

/** `protectedOperation` for a GET whose 200 carries an ETag (If-None-Match → 304 for that caller). */
export function protectedRead(...roles: Role[]): ProtectedMarks {
  return { security: [{ bearerAuth: [] }], "x-roles": roles, middleware: [...privateRead, requireRole(...roles)] as KeyChecked };
}
