/** Runs the query and path parameter scenarios against the Worker entry under workerd + sqld. */
import { afterAll, beforeAll } from "vitest";
import { workerTarget, type WorkerTarget } from "../support/worker-target";
import { requestParametersScenarios } from "../scenarios/request-parameters.scenarios";

let target: WorkerTarget;
beforeAll(async () => {
  target = await workerTarget();
});
afterAll(async () => {
  await target?.close();
});

requestParametersScenarios(() => target);
