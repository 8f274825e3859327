/**
 * The served document is valid OpenAPI 3.0.3 (@apidevtools/swagger-parser) and
 * lints with zero errors and zero warnings under Spectral's `spectral:oas`
 * ruleset and Redocly's `recommended` ruleset (@redocly/cli, run as its CLI on
 * a temp copy of the document, offline: telemetry and update checks off).
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import SwaggerParser from "@apidevtools/swagger-parser";
import { Spectral, type ISpectralDiagnostic, type RulesetDefinition } from "@stoplight/spectral-core";
import { oas } from "@stoplight/spectral-rulesets";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nodeTarget, type NodeTarget } from "../support/node-target";

/** Spectral's DiagnosticSeverity: 0 error, 1 warning, 2 information, 3 hint. */
const SEVERITY = ["error", "warning", "information", "hint"];

let target: NodeTarget;
let document: Record<string, unknown>;

beforeAll(async () => {
  target = await nodeTarget();
  const res = await target.fetch("/openapi.json");
  expect(res.status).toBe(200);
  document = await res.json();
});
afterAll(async () => {
  await target?.close();
});

describe("the served OpenAPI document", () => {
  it("validates as OpenAPI 3.0.3 with swagger-parser", async () => {
    expect(document.openapi).toBe("3.0.3");
    // validate() dereferences in place: give it a copy.
    const api = await SwaggerParser.validate(structuredClone(document) as never);
    expect((api as { openapi?: string }).openapi).toBe("3.0.3");
  });

  it("lints with zero errors and zero warnings under spectral:oas", async () => {
    const spectral = new Spectral();
    spectral.setRuleset({ extends: [[oas as RulesetDefinition, "recommended"]] });
    const results: ISpectralDiagnostic[] = await spectral.run(JSON.stringify(document, null, 2));
    const lines = results.map((r) => `${SEVERITY[r.severity] ?? r.severity} ${r.code} ${r.path.join(".")}: ${r.message}`);
    const problems = results.filter((r) => r.severity <= 1);
    expect(problems.length, `Spectral found errors or warnings:\n${lines.join("\n")}`).toBe(0);
  });

  it("lints with zero errors and zero warnings under Redocly's recommended ruleset", { timeout: 60_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "petstore-redocly-"));
    try {
      const file = join(dir, "openapi.json");
      writeFileSync(file, JSON.stringify(document, null, 2));
      const cli = join(dirname(createRequire(import.meta.url).resolve("@redocly/cli/package.json")), "bin", "cli.js");
      const run = promisify(execFile);
      const env = { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true", NO_COLOR: "1" };
      const { stdout, stderr } = await run(process.execPath, [cli, "lint", file, "--extends=recommended", "--format=stylish"], { cwd: dir, env }).catch(
        (error: { stdout?: string; stderr?: string }) => ({ stdout: error.stdout ?? "", stderr: error.stderr ?? "" }),
      );
      const report = `${stdout}${stderr}`;
      expect(report, report).toMatch(/Woohoo! Your API description is valid/);
      expect(report, report).not.toMatch(/\b(error|warning)\b/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
