/** The database port on a libSQL server, and the `fetch` of every server client (docs/scaling.md#a-saturated-or-silent-server). */
import { createClient } from "@libsql/client/web";
import pLimit from "p-limit";
import { backoffDelayMs } from "../../domain/backoff";
import type { Database } from "../client";
import { aroundRoundTrips } from "../plan";

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

/** `fetchFn` sending a 429's request again (a clone) after `backoffDelayMs(n, baseDelayMs, maxDelayMs)` while the waits total ≤ `budgetMs`; then the last answer. */
export function retryOverloaded(fetchFn: RequestFetch, options: RetryOptions = {}): RequestFetch {
  const { budgetMs = 15_000, baseDelayMs = 25, maxDelayMs = 500, random = Math.random } = options;
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

/** A failed fetch to the database, whatever the runtime calls it, as `TypeError("fetch failed")` (503 `database_unavailable`), the original as `cause`. */
function unreachable(error: unknown): never {
  throw new TypeError(`fetch failed: the database did not answer (${error instanceof Error ? error.message : String(error)})`, { cause: error });
}

/** `fetchFn` failing with a `TimeoutError` (503) when `timeoutMs` pass before the whole answer is read; such a write may have committed. */
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

/** SQLITE_BUSY or SQLITE_LOCKED, primary or extended. */
export function isBusy(error: unknown): boolean {
  const code = String((error as { code?: unknown } | null)?.code ?? "");
  return code === "SQLITE_BUSY" || code.startsWith("SQLITE_BUSY_") || code === "SQLITE_LOCKED";
}

/** Run `attempt` until it does not fail with SQLITE_BUSY/SQLITE_LOCKED, waiting 1 … 64 ms (jittered) between attempts, `lockWaitMs` in all; then rethrow. */
export async function waitOutBusy<T>(attempt: () => T | Promise<T>, lockWaitMs: number): Promise<T> {
  const deadline = Date.now() + lockWaitMs;
  for (let n = 1; ; n++) {
    try {
      return await attempt();
    } catch (error) {
      const remaining = deadline - Date.now();
      if (!isBusy(error) || remaining <= 0) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.min(remaining, backoffDelayMs(n, 1, 64))));
    }
  }
}

/** `server` (a libSQL server's client) with SQLITE_BUSY waited out for up to `lockWaitMs`. */
export function waitingOutBusy(server: Database, lockWaitMs: number): Database {
  return aroundRoundTrips(server, (call) => waitOutBusy(call, lockWaitMs));
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

/** The port on a new libSQL HTTP client for `url` (http(s):// or libsql://), for ONE request on Workers; `close()` ends its streams. */
export function openRemoteDatabase(url: string, options: RemoteDatabaseOptions = {}): Database & { close(): void } {
  return createClient({ url, authToken: options.authToken, fetch: serverFetch(options) });
}

/** `db` with at most `n` round trips at once; the others wait their turn (a Workers invocation's connection budget). */
export function withRoundTrips(db: Database, n: number): Database {
  return aroundRoundTrips(db, pLimit(n));
}
