/**
 * The served document is valid OpenAPI 3.0.3 (@apidevtools/swagger-parser) and
 * lints with zero errors under Spectral's `spectral:oas` ruleset (warnings are
 * allowed and printed when the test fails).
 */
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

  it("lints with zero errors under spectral:oas", async () => {
    const spectral = new Spectral();
    spectral.setRuleset({ extends: [[oas as RulesetDefinition, "recommended"]] });
    const results: ISpectralDiagnostic[] = await spectral.run(JSON.stringify(document, null, 2));
    const lines = results.map((r) => `${SEVERITY[r.severity] ?? r.severity} ${r.code} ${r.path.join(".")}: ${r.message}`);
    const errors = results.filter((r) => r.severity === 0);
    expect(errors.length, `Spectral found errors:\n${lines.join("\n")}`).toBe(0);
  });
});
