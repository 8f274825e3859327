/**
 * The load scenarios (issue 11) against the Worker entry under workerd over
 * sqld: one isolate, each burst's 200 requests sent at once over at most
 * {@link CONNECTIONS} connections.
 *
 * Why a connection limit here and not on Node: the local Workers runtime
 * spends open files per request in flight. workerd holds two descriptors per
 * socket (measured from `/proc/<pid>/fd`), and a request in flight holds two
 * sockets in each of its processes: wrangler's proxy Worker (client in, user
 * Worker out) and the user Worker (proxy in, sqld out). 200 in flight peaked at
 * ~950 descriptors in one workerd, against an open-files limit that may be
 * 1,024 (soft and hard; no process here can raise the hard one); past it, workerd logs
 * "Too many open files" and fails requests. 100 in flight peaked at ~540: near
 * half the limit. This bounds the local runtime, not the Worker:
 * each request still has its own isolate-level I/O, and 100 at once is five
 * times the ~20 concurrent requests at which the shared client broke.
 */
import { Agent, fetch as undiciFetch } from "undici";
import { afterAll, beforeAll } from "vitest";
import { workerTarget, type WorkerTarget } from "../support/worker-target";
import { loadScenarios } from "../scenarios/load.scenarios";

/** Connections to the Worker at once (requests in flight). */
const CONNECTIONS = 100;

let target: WorkerTarget;
const dispatcher = new Agent({ connections: CONNECTIONS });
beforeAll(async () => {
  target = await workerTarget();
});
afterAll(async () => {
  await target?.close();
  await dispatcher.close();
});

loadScenarios(
  () => ({
    ...target,
    sql: target.db,
    fetch: (path, init) =>
      undiciFetch(`${target.url}${path}`, { redirect: "manual", ...init, dispatcher } as Parameters<typeof undiciFetch>[1]) as unknown as Promise<Response>,
  }),
  { connections: CONNECTIONS },
);
