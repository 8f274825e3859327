/** Runs the PUT, PATCH and DELETE /pets/{petId} scenarios against the Worker entry under workerd + sqld. */
import { afterAll, beforeAll } from "vitest";
import { workerTarget, type WorkerTarget } from "../support/worker-target";
import { petChangesScenarios } from "../scenarios/pet-changes.scenarios";

let target: WorkerTarget;
beforeAll(async () => {
  target = await workerTarget();
});
afterAll(async () => {
  await target?.close();
});

petChangesScenarios(() => target);
