/**
 * The load scenarios (issue 11) against the Worker entry under workerd over
 * sqld: one isolate serving 200 concurrent requests.
 */
import { afterAll, beforeAll } from "vitest";
import { workerTarget, type WorkerTarget } from "../support/worker-target";
import { loadScenarios } from "../scenarios/load.scenarios";

let target: WorkerTarget;
beforeAll(async () => {
  target = await workerTarget();
});
afterAll(async () => {
  await target?.close();
});

loadScenarios(() => ({ ...target, sql: target.db.$client }));
