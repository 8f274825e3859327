/**
 * A key where the document asks for one (docs/api.md#authorisation): every operation of the served /openapi.json whose `security`
 * names `bearerAuth` or that lists `x-roles` answers 401 `unauthorized` to a request without a key. The operations are read from the
 * served document, so a new route is checked as soon as it is documented; a route whose middleware lost the key check (`privateRead`
 * in place of `protectedRead(role)`) answers 200, 400 or 404 instead. Shared by both runtimes: test/resources/key-required.test.ts
 * and test/worker/key-required.test.ts.
 */
import { describe, expect, it } from "vitest";
import type { Target } from "../support/target";

type Operation = { security?: Record<string, string[]>[]; "x-roles"?: string[] };
const METHODS = ["get", "put", "post", "delete", "patch"];

/** Register the scenario against the target `getTarget()` returns. */
export function keyRequiredScenarios(getTarget: () => Target): void {
  describe("operations that need a role refuse a request without a key", () => {
    it("every operation marked bearerAuth or x-roles in the served document answers 401 unauthorized", async () => {
      const document = (await (await getTarget().fetch("/openapi.json")).json()) as { paths: Record<string, Record<string, Operation>> };
      const marked = Object.entries(document.paths).flatMap(([path, item]) =>
        Object.entries(item)
          .filter(([method, op]) => METHODS.includes(method) && (op.security?.some((s) => "bearerAuth" in s) || op["x-roles"] !== undefined))
          .map(([method]) => ({ method: method.toUpperCase(), path })),
      );
      expect(marked.length).toBeGreaterThanOrEqual(20);
      const answers = await Promise.all(
        marked.map(async ({ method, path }) => {
          const res = await getTarget().fetch(path.replace(/\{[^}]+\}/g, "1"), { method });
          const body = (await res.json().catch(() => ({}))) as { code?: string };
          return `${method} ${path} → ${res.status} ${body.code}`;
        }),
      );
      expect(answers.filter((answer) => !answer.endsWith("→ 401 unauthorized"))).toEqual([]);
    });
  });
}
