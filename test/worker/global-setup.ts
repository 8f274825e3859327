/**
 * Global setup of the vitest project "worker": one sqld on a temp directory and
 * free port, migrated, and one Worker (src/worker.ts under workerd via
 * wrangler, with production's connection limit: ./entry/) pointed at it with the test variables; their URLs and a staff key
 * are provided to the test files (test/support/worker-target.ts). Stopped and
 * deleted after the run.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@libsql/client";
import type { TestProject } from "vitest/node";
import { startLocalWorker, type LocalWorker } from "../../scripts/local-worker";
import { migrateServer, ONE_CONNECTION, startSqld } from "../../scripts/sqld";
import { TEST_ENV } from "../support/node-target";
import { PURGE_REPEAT_MS, startPurgeRecorder, type PurgeRecorder } from "../support/purge-recorder";
import { testRateLimits } from "../support/worker-target";
import { buildAssets } from "../../scripts/build-assets";

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const started = Date.now();
  const dir = mkdtempSync(join(tmpdir(), "petstore-worker-"));
  const sqld = await startSqld({ dataDir: join(dir, "sqld"), ...ONE_CONNECTION });
  let worker: LocalWorker | undefined;
  let recorder: PurgeRecorder | undefined;
  const teardown = async () => {
    const stopping = Date.now();
    await worker?.stop().catch(() => undefined);
    await recorder?.stop();
    await sqld.stop();
    rmSync(dir, { recursive: true, force: true });
    console.log(`worker suite: stopped in ${Date.now() - stopping} ms`);
  };
  try {
    await migrateServer(sqld.url);
    buildAssets(); // public/ for the [assets] binding
    const client = createClient({ url: sqld.url });
    const { createStaffKeyFor } = await import("../support/staff-key");
    const staffKey = await createStaffKeyFor(client);
    client.close();
    // The local rate limit bindings count for real: raise them like the variables.
    const rateLimits = testRateLimits(TEST_ENV);
    recorder = await startPurgeRecorder();
    // A purge budget no test file exhausts, and the second purge of a write after 1.5 s instead of 10 s.
    const purgeBudget = { CACHE_PURGE_PER_MINUTE: "6000", CACHE_PURGE_BURST: "1000", CACHE_PURGE_REPEAT_MS: String(PURGE_REPEAT_MS) };
    const vars = { ...TEST_ENV, CACHE_PURGE_CAPTURE_URL: recorder.url, ...purgeBudget };
    // Production's six connections per invocation, which `wrangler dev` does not enforce (./entry/connection-cap.ts).
    worker = await startLocalWorker({ databaseUrl: sqld.url, vars, rateLimits, entrypoint: join(import.meta.dirname, "entry", "worker.ts") });
    project.provide("petstoreWorker", { url: worker.url, databaseUrl: sqld.url, staffKey, purgeRecorderUrl: recorder.url });
    console.log(`worker suite: Worker ${worker.url} on sqld ${sqld.url}, ready in ${Date.now() - started} ms; open files ${openFilesLimit()}`);
  } catch (error) {
    await teardown();
    throw error;
  }
  return teardown;
}

/** This process's open-files limit as "soft/hard" (Linux `/proc/self/limits`; workerd and sqld inherit it), or "unknown". */
function openFilesLimit(): string {
  if (!existsSync("/proc/self/limits")) return "unknown";
  const line = readFileSync("/proc/self/limits", "utf8")
    .split("\n")
    .find((l) => l.startsWith("Max open files"));
  const [soft, hard] = line?.split(/\s{2,}/).slice(1, 3) ?? [];
  return soft && hard ? `${soft}/${hard}` : "unknown";
}
