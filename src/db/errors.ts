/**
 * Database errors as the services need to tell them apart: constraint
 * violations (UNIQUE, CHECK, FOREIGN KEY) become the API's 409s.
 */

/**
 * True when a libSQL/SQLite error (or one of its causes) is a constraint violation.
 * Matches by prefix (`SQLITE_CONSTRAINT…`): the embedded driver and sqld report
 * different extended codes for the same violation.
 */
export function isConstraintError(error: unknown): boolean {
  let e: unknown = error;
  for (let depth = 0; e && depth < 4; depth++) {
    const code = (e as { code?: unknown }).code;
    const extended = (e as { extendedCode?: unknown }).extendedCode;
    if (String(code).startsWith("SQLITE_CONSTRAINT") || String(extended).startsWith("SQLITE_CONSTRAINT")) return true;
    if (/UNIQUE constraint failed|CHECK constraint failed|FOREIGN KEY constraint failed/.test(String((e as Error).message))) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
