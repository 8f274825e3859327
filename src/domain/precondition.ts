/**
 * What a conditional write expects of the resource it changes: the domain form
 * of `If-Match` (RFC 9110 §13.1.1). The handler builds it from the header
 * (src/http/caching.ts, `ifMatchPrecondition`); the service reads the
 * resource, asks whether its current representation is the one expected, and
 * writes only at the version it checked.
 */
import { type Resource, StaleVersion } from "./errors";

export interface Precondition {
  /**
   * True when the caller's expectation holds for `current`, the resource's
   * representation now, or for one of `alsoCurrent`: other representations of
   * the same state that a client may hold (a pet as `GET /pets?id=N` shows it: `[pet]`).
   */
  matches(current: unknown, alsoCurrent?: readonly unknown[]): boolean;
}

/**
 * Check `expected` (none: nothing to check) against `resource` `id`, whose
 * representation is now `current` (see `Precondition.matches` for `alsoCurrent`).
 * @throws StaleVersion carrying `current` when the expectation does not hold.
 */
export function requireMatch(expected: Precondition | undefined, resource: Resource, id: number, current: unknown, alsoCurrent: readonly unknown[] = []): void {
  if (expected && !expected.matches(current, alsoCurrent)) throw new StaleVersion(resource, id, { representation: current });
}
