/**
 * The database of the Worker: Drizzle over a libSQL server (Turso, sqld)
 * reached with `@libsql/client/web` (Hrana over HTTP, fetch-based).
 *
 * Build one per request (src/worker.ts): the client keeps pending promises of
 * its own requests, which workerd forbids another request to touch. Building
 * one costs ~65 µs (measured on Node) and no round trip: the client speaks
 * Hrana v2 over HTTP without probing the server first.
 *
 * Overload: a libSQL server that is saturated answers a request with HTTP 429
 * before running any of it (sqld admits `--max-concurrent-requests`, default
 * 128, at once), so the request can be sent again as is, writes included:
 * every `batch` is one HTTP request (one Hrana pipeline, no baton yet), so a
 * refused one left no statement behind. `retryOverloaded` does that with
 * jittered exponential backoff within the request; only when the server still
 * refuses after the last attempt does the 429 reach the caller (the app then
 * answers 503 `database_unavailable` with `Retry-After`).
 */
import { createClient } from "@libsql/client/web";
import { createDatabase, type Database } from "./client";

/** `fetch` as the libSQL client calls it: with a `Request`. */
export type RequestFetch = (request: Request) => Promise<Response>;

export interface RetryOptions {
  /** Attempts in all, the first included (default 8). */
  attempts?: number;
  /** Delay before the first retry, ms; doubled each time, then jittered to 50–100 % (default 25: at most ~3.2 s of waiting in all). */
  baseDelayMs?: number;
  /** Jitter source in [0, 1) (default Math.random). */
  random?: () => number;
}

/**
 * `fetchFn`, but a `429 Too Many Requests` answer is retried after
 * `baseDelayMs · 2^(n−1)` (jittered) up to `attempts` times in all; the last
 * answer is returned whatever it is. Each attempt sends a clone of `request`.
 */
export function retryOverloaded(fetchFn: RequestFetch, options: RetryOptions = {}): RequestFetch {
  const attempts = options.attempts ?? 8;
  const baseDelayMs = options.baseDelayMs ?? 25;
  const random = options.random ?? Math.random;
  return async (request) => {
    for (let attempt = 1; ; attempt++) {
      const last = attempt >= attempts;
      const response = await fetchFn(last ? request : request.clone()).catch(unreachable);
      if (response.status !== 429 || last) return response;
      await response.body?.cancel();
      const nominal = baseDelayMs * 2 ** (attempt - 1);
      await new Promise((resolve) => setTimeout(resolve, nominal / 2 + random() * (nominal / 2)));
    }
  };
}

/**
 * A failed fetch to the database, whatever the runtime calls it (workerd:
 * "internal error; reference = …" when it runs out of sockets; Node:
 * "fetch failed"), as the `TypeError("fetch failed")` that the error handler
 * maps to 503 `database_unavailable` (src/middleware/errors.ts), the original
 * as its `cause`. Not retried: a write may have reached the server.
 */
function unreachable(error: unknown): never {
  throw new TypeError(`fetch failed: the database did not answer (${error instanceof Error ? error.message : String(error)})`, { cause: error });
}

/**
 * A new database handle over a new libSQL HTTP client for `url` (http(s):// or
 * libsql://), for ONE request (see the module comment); 429s are retried.
 */
export function openRemoteDatabase(url: string, authToken?: string, fetchFn: RequestFetch = (request) => fetch(request)): Database {
  return createDatabase(createClient({ url, authToken, fetch: retryOverloaded(fetchFn) }));
}
