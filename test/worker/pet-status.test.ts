/** Runs the pet status transition (by PUT/PATCH, against stock and orders) scenarios against the Worker entry under workerd + sqld. */
import { afterAll, beforeAll } from "vitest";
import { workerTarget, type WorkerTarget } from "../support/worker-target";
import { petStatusScenarios, storePetStatusScenarios } from "../scenarios/pet-status.scenarios";

let target: WorkerTarget;
beforeAll(async () => {
  target = await workerTarget();
});
afterAll(async () => {
  await target?.close();
});

petStatusScenarios(() => target);
storePetStatusScenarios(() => target);
