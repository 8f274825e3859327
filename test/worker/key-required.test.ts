/** Runs the key-required scenario against the Worker entry under workerd + sqld. */
import { afterAll } from "vitest";
import { workerTarget } from "../support/worker-target";
import { keyRequiredScenarios } from "../scenarios/key-required.scenarios";

const target = await workerTarget();
afterAll(() => target.close());
keyRequiredScenarios(() => target);
