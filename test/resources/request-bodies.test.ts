/** Runs the request-body scenarios against the Node app over a fresh temp-file libSQL database. */
import { afterAll, beforeAll } from "vitest";
import { nodeTarget, type NodeTarget } from "../support/node-target";
import { requestBodiesScenarios } from "../scenarios/request-bodies.scenarios";

let target: NodeTarget;
beforeAll(async () => {
  target = await nodeTarget();
});
afterAll(async () => {
  await target?.close();
});

requestBodiesScenarios(() => target);
