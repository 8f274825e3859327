/** Runs the PUT, PATCH and DELETE /pets/{petId} scenarios against the Node app over a fresh temp-file libSQL database. */
import { afterAll, beforeAll } from "vitest";
import { nodeTarget, type NodeTarget } from "../support/node-target";
import { petChangesScenarios } from "../scenarios/pet-changes.scenarios";

let target: NodeTarget;
beforeAll(async () => {
  target = await nodeTarget();
});
afterAll(async () => {
  await target?.close();
});

petChangesScenarios(() => target);
