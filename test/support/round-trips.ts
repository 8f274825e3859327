/** Round trips (each `execute` and `batch`) made through a database, counted. */
import type { Database } from "../../src/db/client";
import { aroundRoundTrips } from "../../src/db/plan";

export interface RoundTripCounter {
  /** `db`, counted. */
  db: Database;
  /** Round trips since creation or the last `reset()`. */
  count(): number;
  reset(): void;
}

/** Count the round trips made through the returned `db`. */
export function countRoundTrips(db: Database): RoundTripCounter {
  let calls = 0;
  return {
    db: aroundRoundTrips(db, (call) => {
      calls += 1;
      return call();
    }),
    count: () => calls,
    reset: () => {
      calls = 0;
    },
  };
}
