/**
 * Runs the key-required scenario against the Node app; and checks that the unsafe composition does not compile: an operation whose
 * document names roles (`protectedOperation(role)`, `protectedRead(role)`) with other middleware than theirs (`npm run typecheck`
 * fails if the `@ts-expect-error` below stops being an error).
 */
import { afterAll, describe, expect, it } from "vitest";
import { privateRead } from "../../src/http/caching";
import { operations } from "../../src/http/schemas";
import { protectedOperation, protectedRead } from "../../src/middleware/security";
import { nodeTarget } from "../support/node-target";
import { keyRequiredScenarios } from "../scenarios/key-required.scenarios";

const target = await nodeTarget();
afterAll(() => target.close());
keyRequiredScenarios(() => target);

describe("a GET that needs a role cannot drop the key check", () => {
  it("compiles with protectedRead(role), not with privateRead as the middleware of a protected operation", () => {
    const route = operations(["Test"]);
    const responses = { 200: { description: "A page." } };
    const safe = route({ method: "get", path: "/safe", ...protectedRead("staff"), responses });
    // @ts-expect-error `privateRead` replaces the key check of `protectedOperation("staff")`: a staff page served to anyone.
    const unsafe = route({ method: "get", path: "/unsafe", ...protectedOperation("staff"), middleware: privateRead, responses });
    expect(safe.middleware).toContain(privateRead[0]);
    expect(unsafe.middleware).toBe(privateRead);
  });
});
