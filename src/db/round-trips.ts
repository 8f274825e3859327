/**
 * Counting wrappers around the libSQL client: every call that reaches the
 * database (`execute`, `batch`, a group-committed `write`, `executeMultiple`,
 * `migrate`, `transaction`)
 * is one round trip (on the edge, tens of ms each). `countRoundTrips` counts
 * everything (tests, benchmarks); `roundTripsPerRequest` counts per async
 * context (AsyncLocalStorage: Node, and Workers with `nodejs_compat`), for the
 * request log.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { Client } from "@libsql/client";
import { createDatabase, type Database } from "./client";

const ROUND_TRIP_METHODS = new Set(["execute", "batch", "write", "executeMultiple", "migrate", "transaction"]);

export interface RoundTripCounter {
  /** A Database whose client counts its calls. */
  db: Database;
  /** Round trips since creation or the last `reset()`. */
  count(): number;
  reset(): void;
}

/** `db` whose client calls `onRoundTrip()` before each round trip; same connection. */
function wrap(db: Database, onRoundTrip: () => void): Database {
  const client = new Proxy(db.$client, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof property === "string" && ROUND_TRIP_METHODS.has(property) && typeof value === "function") {
        return (...args: unknown[]) => {
          onRoundTrip();
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      return typeof value === "function" ? value.bind(target) : value;
    },
  }) as Client;
  return createDatabase(client);
}

/** Wrap `db`'s client; the returned Database shares the same connection. */
export function countRoundTrips(db: Database): RoundTripCounter {
  let calls = 0;
  return {
    db: wrap(db, () => {
      calls += 1;
    }),
    count: () => calls,
    reset: () => {
      calls = 0;
    },
  };
}

export interface RequestRoundTrips {
  /** `db` with its round trips counted toward the `track` call they happen in (same connection). */
  wrap(db: Database): Database;
  /** Run `fn`; resolves with the round trips made inside it (its async continuations included). */
  track(fn: () => Promise<unknown>): Promise<number>;
}

/** Per-request round-trip counts of the databases it wraps (see module docs). */
export function roundTripsPerRequest(): RequestRoundTrips {
  const storage = new AsyncLocalStorage<{ count: number }>();
  const onRoundTrip = () => {
    const store = storage.getStore();
    if (store) store.count += 1;
  };
  return {
    wrap: (db) => wrap(db, onRoundTrip),
    async track(fn) {
      const store = { count: 0 };
      await storage.run(store, fn);
      return store.count;
    },
  };
}
