/** Runs the GET /pets and GET /pets/{petId} scenarios against the Worker entry under workerd + sqld. */
import { afterAll, beforeAll } from "vitest";
import { workerTarget, type WorkerTarget } from "../support/worker-target";
import { petReadsScenarios } from "../scenarios/pet-reads.scenarios";

let target: WorkerTarget;
beforeAll(async () => {
  target = await workerTarget();
});
afterAll(async () => {
  await target?.close();
});

petReadsScenarios(() => target);
