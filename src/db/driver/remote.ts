/**
 * The database port on a libSQL server (Turso, sqld) reached with
 * `@libsql/client/web` (Hrana over HTTP, fetch-based): the Worker's database,
 * one per request (src/worker.ts; it costs no round trip). A server's 429
 * (overloaded, nothing ran) is retried within the request for up to a budget
 * of waiting time; then the caller gets it (503 `database_unavailable`).
 * Node's server client gives each request a time limit (`timeLimited`,
 * src/db/driver/open.ts), so a server that stops answering fails calls instead of
 * holding them, and every write queued behind them, for as long as the
 * connection stays open.
 * Why retrying is safe: docs/scaling.md, "A saturated or silent server".
 */
import { createClient } from "@libsql/client/web";
import { backoffDelayMs } from "../../domain/backoff";
import type { Database } from "../client";

/** `fetch` as the libSQL client calls it: with a `Request`. */
export type RequestFetch = (request: Request) => Promise<Response>;

export interface RetryOptions {
  /** Total waiting between attempts before a 429 is given up, ms (default 15 000). */
  budgetMs?: number;
  /** Delay before the first retry, ms; doubled each time up to `maxDelayMs`, each jittered to 50–100 % (default 25). */
  baseDelayMs?: number;
  /** Longest single wait, ms (default 500): waiting clients keep asking while slots free up. */
  maxDelayMs?: number;
  /** Jitter source in [0, 1) (default Math.random). */
  random?: () => number;
}

/**
 * `fetchFn`, but a `429 Too Many Requests` answer is retried after
 * `backoffDelayMs(n, baseDelayMs, maxDelayMs)` (src/domain/backoff.ts), while the waits add up
 * to at most `budgetMs`; then the last answer is returned whatever it is.
 * Each attempt sends a clone of `request`.
 */
export function retryOverloaded(fetchFn: RequestFetch, options: RetryOptions = {}): RequestFetch {
  const budgetMs = options.budgetMs ?? 15_000;
  const baseDelayMs = options.baseDelayMs ?? 25;
  const maxDelayMs = options.maxDelayMs ?? 500;
  const random = options.random ?? Math.random;
  return async (request) => {
    let waited = 0;
    for (let attempt = 1; ; attempt++) {
      const delay = backoffDelayMs(attempt, baseDelayMs, maxDelayMs, random);
      const last = waited + delay > budgetMs;
      const response = await fetchFn(last ? request : request.clone()).catch(unreachable);
      if (response.status !== 429 || last) return response;
      await response.body?.cancel();
      waited += delay;
      await new Promise((resolve) => setTimeout(resolve, delay));
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
 * `fetchFn` with each request aborted once `timeoutMs` have passed without its
 * whole answer (`AbortSignal.timeout`); the answer is read in full within that
 * time, because an answer that stops halfway is not always ended by the abort
 * (its body read hung in about 1 call of 4). The call then fails with a
 * `TimeoutError`, wrapped in a failed-fetch `TypeError` (503
 * `database_unavailable`). A write whose answer never came may have
 * committed; a client that retries it with its Idempotency-Key gets the
 * original result (docs/api.md#idempotency-key).
 */
export function timeLimited(fetchFn: RequestFetch, timeoutMs: number): RequestFetch {
  return async (request) => {
    const signal = AbortSignal.timeout(timeoutMs);
    const aborted = new Promise<never>((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true }));
    aborted.catch(() => {});
    const response = await Promise.race([fetchFn(new Request(request, { signal })), aborted]);
    const body = await Promise.race([response.arrayBuffer(), aborted]).catch((error: unknown) => {
      response.body?.cancel(error).catch(() => undefined);
      throw error;
    });
    // The body is decoded already: its wire encoding and length no longer describe it.
    const headers = new Headers(response.headers);
    for (const name of ["content-encoding", "content-length", "transfer-encoding"]) headers.delete(name);
    const empty = response.status === 204 || response.status === 205 || response.status === 304;
    return new Response(empty ? null : body, { status: response.status, statusText: response.statusText, headers });
  };
}

export interface RemoteDatabaseOptions {
  /** Token of the libSQL server. */
  authToken?: string;
  /** How requests are sent (default: the runtime's `fetch`). */
  fetch?: RequestFetch;
  /** Retrying a 429: see `retryOverloaded`. */
  retry?: RetryOptions;
  /** Time limit of each request, answer included, ms (default: none). */
  timeoutMs?: number;
}

/** `fetch` for a libSQL client: 429s retried, each request time-limited when `timeoutMs` is given. */
export function serverFetch(options: RemoteDatabaseOptions = {}): RequestFetch {
  const fetchFn = options.fetch ?? ((request: Request) => fetch(request));
  return retryOverloaded(options.timeoutMs ? timeLimited(fetchFn, options.timeoutMs) : fetchFn, options.retry);
}

/** The port on a new libSQL HTTP client for `url` (http(s):// or libsql://); `close()` ends its streams. */
export type RemoteDatabase = Database & { close(): void };

/** A new libSQL HTTP client for `url` (http(s):// or libsql://), for ONE request on Workers (see the module comment). */
export function openRemoteDatabase(url: string, options: RemoteDatabaseOptions = {}): RemoteDatabase {
  return createClient({ url, authToken: options.authToken, fetch: serverFetch(options) });
}
