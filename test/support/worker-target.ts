/**
 * The Worker target: the real Worker entry (src/worker.ts) under workerd,
 * backed by sqld, reached over HTTP. One Worker and one sqld are shared by the
 * whole vitest run (started by test/worker/global-setup.ts and handed over with
 * `provide`/`inject`), because workerd takes seconds to start; scenarios build
 * their own data, so sharing the database is safe.
 */
import { createClient } from "@libsql/client";
import { inject } from "vitest";
import type { Database } from "../../src/db/client";
import { RATE_LIMIT_BINDING_NAMES } from "../../src/runtime/workers/rate-limiter";
import type { Target } from "./target";

/** What the Worker suite's global setup provides to test files. */
export interface WorkerSuiteInfo {
  /** Base URL of the Worker, e.g. `http://127.0.0.1:41234`. */
  url: string;
  /** sqld's URL (`http://127.0.0.1:PORT`), for direct database checks. */
  databaseUrl: string;
  /** A staff key made once per run with test/support/staff-key.ts. */
  staffKey: string;
  /** Where the Worker's cache purges are recorded (test/support/purge-recorder.ts). */
  purgeRecorderUrl: string;
}

declare module "vitest" {
  interface ProvidedContext {
    petstoreWorker: WorkerSuiteInfo;
  }
}

export interface WorkerTarget extends Target {
  /** The Worker's base URL. */
  url: string;
  /** The same database the Worker uses (sqld over HTTP). */
  db: Database;
  /** Where the Worker's cache purges are recorded. */
  purgeRecorderUrl: string;
}

/**
 * Connect to the shared Worker of this run.
 * @throws Error when the file does not run in the vitest project "worker".
 */
export async function workerTarget(): Promise<WorkerTarget> {
  const info = inject("petstoreWorker");
  if (!info) throw new Error('No Worker for this file: worker tests run in the vitest project "worker" (test/worker/**).');
  return targetAt(info, info.url);
}

/**
 * Start a Worker of its own for one test file, on the run's shared sqld (or at `options.databaseUrl`), with
 * the test variables overridden by `vars` (e.g. `WEBHOOKS_ALLOW_PRIVATE:
 * "false"`, which the shared Worker cannot have: its receivers are on
 * loopback). Takes a few seconds; `close()` stops it.
 * @throws Error when the file does not run in the vitest project "worker".
 */
export async function ownWorkerTarget(
  vars: Record<string, string>,
  options: { databaseUrl?: string; onLog?: (line: string) => void } = {},
): Promise<WorkerTarget> {
  const info = inject("petstoreWorker");
  if (!info) throw new Error('No sqld for this file: worker tests run in the vitest project "worker" (test/worker/**).');
  const [{ startLocalWorker }, { TEST_ENV }] = await Promise.all([import("../../scripts/local-worker"), import("./node-target")]);
  const databaseUrl = options.databaseUrl ?? info.databaseUrl;
  const worker = await startLocalWorker({ databaseUrl, vars: { ...TEST_ENV, ...vars }, rateLimits: testRateLimits(TEST_ENV), onLog: options.onLog });
  return targetAt(info, worker.url, () => worker.stop());
}

/** `simple.limit` of the per-minute sign-up binding for an hourly sign-up limit: ceil(hourly / 60). */
export function signupBindingLimitPerMinute(signupsPerHour: number): number {
  return Math.max(1, Math.ceil(signupsPerHour / 60));
}

/** The local rate limit bindings raised like the test variables `env` (they count for real under workerd). */
export function testRateLimits(env: Record<string, string>): Record<string, number> {
  return {
    [RATE_LIMIT_BINDING_NAMES.ip]: Number(env.RATE_LIMIT_ANON_PER_MIN),
    [RATE_LIMIT_BINDING_NAMES.key]: Number(env.RATE_LIMIT_KEY_PER_MIN),
    [RATE_LIMIT_BINDING_NAMES.signup]: signupBindingLimitPerMinute(Number(env.RATE_LIMIT_SIGNUP_PER_HOUR)),
  };
}

/** The target of the Worker at `url` on the run's sqld (`info`); `close()` also runs `stop` (a Worker of the file's own). */
function targetAt(info: WorkerSuiteInfo, url: string, stop?: () => Promise<void>): WorkerTarget {
  const client = createClient({ url: info.databaseUrl });
  return {
    name: "worker",
    url,
    db: client,
    staffKey: info.staffKey,
    purgeRecorderUrl: info.purgeRecorderUrl,
    fetch: (path, init) => fetch(`${url}${path}`, { redirect: "manual", ...init }),
    dispatch: async () => {
      await (await fetch(`${url}/__scheduled?cron=*+*+*+*+*`)).body?.cancel();
    },
    close: async () => {
      if (stop) await untilDispatchFree(client);
      client.close();
      await stop?.();
    },
  };
}

/**
 * Until no turn holds a claim on the shared database (polled every 50 ms, 30 s at most): a Worker stopped mid-turn leaves its claims
 * for the next files' Workers to wait out (up to 15 s), as a sender evicted mid-turn does in production.
 * @throws Error when a claim is still held after 30 s.
 */
async function untilDispatchFree(client: ReturnType<typeof createClient>): Promise<void> {
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 50))) {
    const { rows } = await client.execute("SELECT max(due_at) AS until FROM webhooks WHERE lease_token IS NOT NULL");
    const until = rows[0]?.until;
    if (typeof until !== "string" || until <= new Date().toISOString()) return;
  }
  throw new Error("A turn of this file's Worker still holds a claim after 30 s: stopping it would leave the claim behind.");
}
