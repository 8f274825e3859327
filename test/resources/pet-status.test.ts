/** Runs the pet status transition (by PUT/PATCH, against stock and orders) scenarios against the Node app over a fresh temp-file libSQL database. */
import { afterAll, beforeAll } from "vitest";
import { nodeTarget, type NodeTarget } from "../support/node-target";
import { petStatusScenarios, storePetStatusScenarios } from "../scenarios/pet-status.scenarios";

let target: NodeTarget;
beforeAll(async () => {
  target = await nodeTarget();
});
afterAll(async () => {
  await target?.close();
});

petStatusScenarios(() => target);
storePetStatusScenarios(() => target);
