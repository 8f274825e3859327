/**
 * The method scenarios (issue 11) against the Worker under workerd, over raw
 * sockets. Methods workerd's own HTTP parser does not know (e.g. `FOO`) and
 * CONNECT never reach the Worker: workerd answers them itself (README, Tests).
 */
import { inject } from "vitest";
import { methodScenarios } from "../scenarios/methods.scenarios";
import "../support/worker-target";

methodScenarios(() => ({ url: inject("petstoreWorker").url }));
