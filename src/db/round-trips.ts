/** Round trips (each `execute` and `batch`) over the database port: all of them (`countRoundTrips`), or per request (`roundTripsPerRequest`). */
import { AsyncLocalStorage } from "node:async_hooks";
import type { Database } from "./client";
import { aroundRoundTrips } from "./plan";

/** `db` calling `onRoundTrip()` before each round trip. */
function counted(db: Database, onRoundTrip: () => void): Database {
  return aroundRoundTrips(db, (call) => {
    onRoundTrip();
    return call();
  });
}

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
    db: counted(db, () => {
      calls += 1;
    }),
    count: () => calls,
    reset: () => {
      calls = 0;
    },
  };
}

export interface RequestRoundTrips {
  /** `db` with its round trips counted toward the `track` call they happen in. */
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
    wrap: (db) => counted(db, onRoundTrip),
    async track(fn) {
      const store = { count: 0 };
      await storage.run(store, fn);
      return store.count;
    },
  };
}
