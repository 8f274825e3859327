/** When the next dispatch run should start (docs/webhooks.md#workers), for a runtime that starts runs at given times. */
import type { Database } from "../../db/client";
import { execute } from "../../db/plan";
import { probe } from "./frontier";

/**
 * When the next run should start, as an ISO 8601 time, or null when nothing waits: the earliest due time of a subscription (a retry, a
 * claim's end), or the end of a range's lease while new events wait behind it. Events no run has fanned out yet are not counted: the
 * writes that commit them start runs. 3 rows read. @throws the driver's error.
 */
export async function nextRunAt(db: Database, now: Date): Promise<string | null> {
  const [state] = await execute(db, probe(false), {});
  if (!state) return null;
  const held = state.leaseUntil !== null && state.leaseUntil > now.toISOString() && state.newest > state.frontier;
  const times = [state.nextDue, held ? state.leaseUntil : null].filter((t): t is string => t !== null);
  return times.sort()[0] ?? null;
}
