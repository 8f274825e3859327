/** Database errors as services tell them apart: constraint violations (UNIQUE, CHECK, FOREIGN KEY) become 409s (docs/api.md#errors). */

/** True when `error` or one of its causes is a constraint violation: any `SQLITE_CONSTRAINT…` code (drivers differ in extended codes), or its message. */
export function isConstraintError(error: unknown): boolean {
  let e: unknown = error;
  for (let depth = 0; e && depth < 4; depth++) {
    const { code, extendedCode, message, cause } = e as { code?: unknown; extendedCode?: unknown; message?: unknown; cause?: unknown };
    if (String(code).startsWith("SQLITE_CONSTRAINT") || String(extendedCode).startsWith("SQLITE_CONSTRAINT")) return true;
    if (/UNIQUE constraint failed|CHECK constraint failed|FOREIGN KEY constraint failed/.test(String(message))) return true;
    e = cause;
  }
  return false;
}
