/** Runs the store write events scenarios against the Worker entry under workerd + sqld. */
import { afterAll, beforeAll } from "vitest";
import { workerTarget, type WorkerTarget } from "../support/worker-target";
import { storeEventsScenarios } from "../scenarios/store-events.scenarios";

let target: WorkerTarget;
beforeAll(async () => {
  target = await workerTarget();
});
afterAll(async () => {
  await target?.close();
});

storeEventsScenarios(() => target);
