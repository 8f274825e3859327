/** What a conditional write expects of its resource: the domain form of `If-Match` (RFC 9110 §13.1.1; docs/architecture.md#errors-domain-errors-one-table-at-the-edge). */
import { type Resource, StaleVersion } from "./errors";

export interface Precondition {
  /** True when the expectation holds for `current` (the representation now) or one of `alsoCurrent` (the same state as a client may hold it, e.g. `[pet]`). */
  matches(current: unknown, alsoCurrent?: readonly unknown[]): boolean;
}

/** Check `expected` (none: nothing to check) against `resource` `id`, now `current` (or `alsoCurrent`). @throws StaleVersion carrying `current`. */
export function requireMatch(expected: Precondition | undefined, resource: Resource, id: number, current: unknown, alsoCurrent: readonly unknown[] = []): void {
  if (expected && !expected.matches(current, alsoCurrent)) throw new StaleVersion(resource, id, { representation: current });
}
