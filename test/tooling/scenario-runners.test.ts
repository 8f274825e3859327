/**
 * Every end-to-end scenario runs against both entry points (issue 5): each
 * test/scenarios/<name>.scenarios.ts has a runner in test/node/<name>.test.ts
 * (Node app, embedded file) and in test/worker/<name>.test.ts (the Worker under
 * workerd + sqld), and each runner calls the scenario function it exports.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..");
const scenarioFiles = readdirSync(join(root, "scenarios")).filter((f) => f.endsWith(".scenarios.ts"));

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
      for (const side of ["node", "worker"]) {
        const runner = join(root, side, `${name}.test.ts`);
        expect(existsSync(runner), `test/${side}/${name}.test.ts exists`).toBe(true);
        const text = readFileSync(runner, "utf8");
        for (const fn of functions) expect(text, `test/${side}/${name}.test.ts calls ${fn}`).toMatch(new RegExp(`\\b${fn}\\(\\s*\\(\\)\\s*=>`));
      }
    });
  }
});
