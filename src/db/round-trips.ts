/** Round trips (each `execute` and `batch`) over the database port, counted per request. */
import { AsyncLocalStorage } from "node:async_hooks";
import type { Database } from "./client";
import { aroundRoundTrips } from "./plan";

export interface RequestRoundTrips {
  /** `db` with its round trips counted toward the `track` call they happen in. */
  wrap(db: Database): Database;
  /** Run `fn`; resolves with the round trips made inside it (its async continuations included). */
  track(fn: () => Promise<unknown>): Promise<number>;
}

/** Per-request round-trip counts of the databases it wraps (see module docs). */
export function roundTripsPerRequest(): RequestRoundTrips {
  const storage = new AsyncLocalStorage<{ count: number }>();
  return {
    wrap: (db) =>
      aroundRoundTrips(db, (call) => {
        const store = storage.getStore();
        if (store) store.count += 1;
        return call();
      }),
    async track(fn) {
      const store = { count: 0 };
      await storage.run(store, fn);
      return store.count;
    },
  };
}
