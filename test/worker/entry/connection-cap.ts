/**
 * Production's limit on the test Worker: an invocation has at most six connections waiting for response headers; a seventh waits
 * until one of them has its headers (https://developers.cloudflare.com/workers/platform/limits/#simultaneous-open-connections).
 * `wrangler dev` does not enforce it; this module wraps the global `fetch` (the database client's round trips and webhook attempts
 * alike) before the Worker's modules load, and `capped` runs one invocation under it. Each wait is counted in `waited`.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import pLimit, { type LimitFunction } from "p-limit";

/** Connections an invocation may have waiting for response headers. */
export const CONNECTIONS = 6;

const invocation = new AsyncLocalStorage<LimitFunction>();
/** Connections that had to wait for one of the six, since the isolate started. */
export const waited = { count: 0 };

const platformFetch = globalThis.fetch;
globalThis.fetch = (input, init) => {
  const limit = invocation.getStore();
  if (!limit) return platformFetch(input, init);
  if (limit.activeCount >= CONNECTIONS) waited.count += 1;
  return limit(() => platformFetch(input, init));
};

/** Run `handler` as one invocation with connections of its own (what it leaves in waitUntil included). */
export function capped<T>(handler: () => T): T {
  return invocation.run(pLimit(CONNECTIONS), handler);
}
