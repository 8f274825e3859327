/** What a conditional write expects of its resource: the domain form of `If-Match` (RFC 9110 §13.1.1; docs/architecture.md#errors-domain-errors-one-table-at-the-edge). */
import { type Conflict, type DomainError, NotFound, type Resource, StaleVersion } from "./errors";

export interface Precondition {
  /** True when the expectation holds for `current` (the representation now) or one of `alsoCurrent` (the same state as a client may hold it, e.g. `[pet]`). */
  matches(current: unknown, alsoCurrent?: readonly unknown[]): boolean;
}

/** What a conditional write takes besides its input: what the resource is `expected` to be (If-Match; none: write anyway), and the time `now`. */
export interface ConditionalWrite {
  expected?: Precondition;
  now: Date;
}

/** Check `expected` (none: nothing to check) against `resource` `id`, now `current` (or `alsoCurrent`). @throws StaleVersion carrying `current`. */
export function requireMatch(expected: Precondition | undefined, resource: Resource, id: number, current: unknown, alsoCurrent: readonly unknown[] = []): void {
  if (expected && !expected.matches(current, alsoCurrent)) throw new StaleVersion(resource, id, { representation: current });
}

/** The version a conditional write checks: null without `expected` (nothing read), else that `read` returns, once `expected` matches. @throws StaleVersion, and what `read` throws. */
export async function checkedVersion(
  expected: Precondition | undefined,
  resource: Resource,
  id: number,
  read: () => Promise<{ current: unknown; version: number; alsoCurrent?: readonly unknown[] }>,
): Promise<number | null> {
  if (!expected) return null;
  const { current, version, alsoCurrent } = await read();
  requireMatch(expected, resource, id, current, alsoCurrent);
  return version;
}

/** Why a conditional write to `resource` `id` changed nothing, by the rows its batch read back: none, NotFound; else the first row's `conflict`, else StaleVersion. */
export function refusal<R>(resource: Resource, id: number, [row]: readonly R[], conflict: (row: R) => Conflict | false): DomainError {
  if (!row) return new NotFound(resource, id);
  return conflict(row) || new StaleVersion(resource, id);
}
