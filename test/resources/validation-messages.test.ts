/**
 * Validation messages name the rule, over the whole served document (docs/api.md#errors, issue 40): every body member and query
 * parameter of every operation is sent values of the wrong kind and out of range (raw JSON, so `1e400` arrives as Infinity), and every
 * 400 `validation_error` that comes back has one detail per fault, no message that names a JSON type twice ("must be a number, not
 * number"), none in Zod's own wording and none that names a format instead of the rule ("must be in the regex format").
 */
import SwaggerParser from "@apidevtools/swagger-parser";
import { afterAll, beforeAll, expect, it } from "vitest";
import { nodeTarget, type NodeTarget } from "../support/node-target";

type Schema = { properties?: Record<string, unknown>; allOf?: Schema[] };
type Parameter = { name: string; in: string };
type Operation = { parameters?: Parameter[]; requestBody?: { content: Record<string, { schema: Schema }> } };

/** Raw JSON values of every kind, and past the ranges the document states. */
const BODY_VALUES = ["null", "true", '"text"', '""', "1.5", "-1", "0", "1e400", "-1e400", "9007199254740992", "[]", "{}", `"${"x".repeat(300)}"`];
/** Query values of the wrong shape or out of range. */
const QUERY_VALUES = ["", "abc", "-1", "0", "1.5", "1e400", "9007199254740992", "101"];

let target: NodeTarget;
let paths: Record<string, Record<string, Operation>>;

beforeAll(async () => {
  target = await nodeTarget();
  const document = await (await target.fetch("/openapi.json")).json();
  paths = ((await SwaggerParser.dereference(document)) as unknown as { paths: typeof paths }).paths;
});
afterAll(async () => {
  await target?.close();
});

/** The properties of a body schema, through `allOf`. */
function propertiesOf(schema: Schema): string[] {
  return [...Object.keys(schema.properties ?? {}), ...(schema.allOf ?? []).flatMap(propertiesOf)];
}

/** What is wrong with the details of `body` (a 400 validation_error), if anything. */
function problems(what: string, body: { code?: string; details?: { path: string; message: string }[] }): string[] {
  if (body.code !== "validation_error") return [];
  const found: string[] = [];
  const seen = new Set<string>();
  for (const { path, message } of body.details ?? []) {
    const key = `${path}: ${message}`;
    if (seen.has(key)) found.push(`${what}: the same detail twice (${key})`);
    seen.add(key);
    if (/must be (?:an? )?(\w+), not (?:an? )?\1\b/.test(message)) found.push(`${what}: names a type twice (${key})`);
    if (/Invalid input|expected \w+, received|Unrecognized key/.test(message)) found.push(`${what}: Zod's wording (${key})`);
    // A pattern without its own message (`.regex(re)`) says only "in the regex format": the rule is never named.
    if (/in the \w+ format/.test(message)) found.push(`${what}: a format without its own message (${key})`);
  }
  return found;
}

it("every message over every body member and query parameter names its rule once", async () => {
  const found: string[] = [];
  let checked = 0;
  for (const [template, item] of Object.entries(paths)) {
    const path = template.replace(/\{[^}]+\}/g, "1");
    for (const [method, operation] of Object.entries(item)) {
      const schema = operation.requestBody?.content["application/json"]?.schema;
      for (const member of schema ? propertiesOf(schema) : []) {
        for (const value of BODY_VALUES) {
          const res = await target.fetch(path, {
            method: method.toUpperCase(),
            headers: { Authorization: `Bearer ${target.staffKey}`, "Content-Type": "application/json" },
            body: `{${JSON.stringify(member)}:${value}}`,
          });
          found.push(...problems(`${method.toUpperCase()} ${template} {${member}: ${value}}`, await res.json()));
          checked += 1;
        }
      }
      for (const parameter of (operation.parameters ?? []).filter((p) => p.in === "query")) {
        for (const value of QUERY_VALUES) {
          const res = await target.fetch(`${path}?${parameter.name}=${encodeURIComponent(value)}`, {
            method: method.toUpperCase(),
            headers: { Authorization: `Bearer ${target.staffKey}` },
          });
          if (res.headers.get("content-type")?.startsWith("application/json")) {
            found.push(...problems(`${method.toUpperCase()} ${template}?${parameter.name}=${value}`, await res.json()));
          }
          checked += 1;
        }
      }
    }
  }
  expect(checked).toBeGreaterThan(300);
  expect(found).toEqual([]);
});
