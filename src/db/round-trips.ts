/**
 * A counting wrapper around the libSQL client, for tests and benchmarks only:
 * every call that reaches the database (`execute`, `batch`, `executeMultiple`,
 * `migrate`, `transaction`) is one round trip (on the edge, tens of ms each).
 */
import type { Client } from "@libsql/client";
import { createDatabase, type Database } from "./client";

const ROUND_TRIP_METHODS = new Set(["execute", "batch", "executeMultiple", "migrate", "transaction"]);

export interface RoundTripCounter {
  /** A Database whose client counts its calls. */
  db: Database;
  /** Round trips since creation or the last `reset()`. */
  count(): number;
  reset(): void;
}

/** Wrap `db`'s client; the returned Database shares the same connection. */
export function countRoundTrips(db: Database): RoundTripCounter {
  let calls = 0;
  const client = new Proxy(db.$client, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof property === "string" && ROUND_TRIP_METHODS.has(property) && typeof value === "function") {
        return (...args: unknown[]) => {
          calls += 1;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      return typeof value === "function" ? value.bind(target) : value;
    },
  }) as Client;
  return {
    db: createDatabase(client),
    count: () => calls,
    reset: () => {
      calls = 0;
    },
  };
}
