/** Runs the order list and read scenarios against the Node app over a fresh temp-file libSQL database. */
import { afterAll, beforeAll } from "vitest";
import { nodeTarget, type NodeTarget } from "../support/node-target";
import { orderListsScenarios } from "../scenarios/order-lists.scenarios";

let target: NodeTarget;
beforeAll(async () => {
  target = await nodeTarget();
});
afterAll(async () => {
  await target?.close();
});

orderListsScenarios(() => target);
