/** Runs the GET /pets and GET /pets/{petId} scenarios against the Node app over a fresh temp-file libSQL database. */
import { afterAll, beforeAll } from "vitest";
import { nodeTarget, type NodeTarget } from "../support/node-target";
import { petReadsScenarios } from "../scenarios/pet-reads.scenarios";

let target: NodeTarget;
beforeAll(async () => {
  target = await nodeTarget();
});
afterAll(async () => {
  await target?.close();
});

petReadsScenarios(() => target);
