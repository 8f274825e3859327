/** Runs the store's If-Match and Idempotency-Key scenarios against the Worker entry under workerd + sqld. */
import { afterAll, beforeAll } from "vitest";
import { workerTarget, type WorkerTarget } from "../support/worker-target";
import { orderSafeWritesScenarios } from "../scenarios/order-safe-writes.scenarios";

let target: WorkerTarget;
beforeAll(async () => {
  target = await workerTarget();
});
afterAll(async () => {
  await target?.close();
});

orderSafeWritesScenarios(() => target);
