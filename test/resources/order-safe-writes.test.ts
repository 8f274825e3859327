/** Runs the store's If-Match and Idempotency-Key scenarios against the Node app over a fresh temp-file libSQL database. */
import { afterAll, beforeAll } from "vitest";
import { nodeTarget, type NodeTarget } from "../support/node-target";
import { orderSafeWritesScenarios } from "../scenarios/order-safe-writes.scenarios";

let target: NodeTarget;
beforeAll(async () => {
  target = await nodeTarget();
});
afterAll(async () => {
  await target?.close();
});

orderSafeWritesScenarios(() => target);
