/**
 * Every `pattern` of the served /openapi.json is a flag-free ECMA-262 regular expression (OpenAPI 3.1 / JSON Schema 2020-12 §6.3.3:
 * "a regular expression, according to the ECMA-262 dialect", no `/…/flags` literal) that accepts its schema's own examples. A zod
 * `.regex(/…/u)` once came out as a pattern ending in a literal `/u`, which every validating client rejects (issue 54, item 4).
 */
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nodeTarget, type NodeTarget } from "../support/node-target";

type Node = Record<string, unknown>;
/** A schema with a `pattern`, where the document has it, and the examples it states (`example`, `examples`, enum members). */
interface Patterned {
  where: string;
  pattern: string;
  examples: unknown[];
}

/** Every schema of `value` with a `pattern`, depth first; `where` is its JSON pointer. */
function patterned(value: unknown, where = "#"): Patterned[] {
  if (Array.isArray(value)) return value.flatMap((item, i) => patterned(item, `${where}/${i}`));
  if (typeof value !== "object" || value === null) return [];
  const node = value as Node;
  const own: Patterned[] =
    typeof node.pattern === "string"
      ? [{ where, pattern: node.pattern, examples: [node.example, ...(Array.isArray(node.examples) ? node.examples : [])].filter((e) => e !== undefined) }]
      : [];
  return [...own, ...Object.entries(node).flatMap(([key, child]) => patterned(child, `${where}/${key.replaceAll("~", "~0").replaceAll("/", "~1")}`))];
}

/** Parameters state examples beside their schema: hand a parameter's `example(s)` to the schema that has the pattern. */
function parameterExamples(doc: Node): Patterned[] {
  const found: Patterned[] = [];
  for (const [path, item] of Object.entries((doc.paths ?? {}) as Record<string, Record<string, { parameters?: Node[] }>>)) {
    for (const [method, op] of Object.entries(item)) {
      for (const parameter of op.parameters ?? []) {
        const schema = parameter.schema as Node | undefined;
        const examples = [parameter.example, ...Object.values((parameter.examples ?? {}) as Record<string, { value?: unknown }>).map((e) => e.value)];
        if (typeof schema?.pattern === "string")
          found.push({
            where: `${method.toUpperCase()} ${path} ${parameter.name}`,
            pattern: schema.pattern,
            examples: examples.filter((e) => e !== undefined),
          });
      }
    }
  }
  return found;
}

let target: NodeTarget;
let patterns: Patterned[] = [];

beforeAll(async () => {
  target = await nodeTarget();
  const doc = (await (await target.fetch("/openapi.json")).json()) as Node;
  patterns = [...patterned(doc), ...parameterExamples(doc)];
});

afterAll(async () => {
  await target?.close();
});

/** The patterns of `found` that are not a flag-free ECMA-262 regular expression, or refuse one of their own examples. */
function problems(found: Patterned[]): string[] {
  return found.flatMap(({ where, pattern, examples }) => {
    let re: RegExp;
    try {
      re = new RegExp(pattern);
    } catch (error) {
      return [`${where}: ${pattern} is not an ECMA-262 regular expression (${(error as Error).message})`];
    }
    // zod-to-openapi writes a flagged regex as its source, "/" and its flags (`^[a-z]+$/u`).
    if (/\/[dgimsuvy]+$/.test(pattern)) return [`${where}: ${pattern} ends in flags`];
    return examples.filter((e) => typeof e !== "string" || !re.test(e)).map((e) => `${where}: ${pattern} refuses its example ${JSON.stringify(e)}`);
  });
}

describe("the patterns of the served /openapi.json", () => {
  it("each is a flag-free ECMA-262 regular expression that accepts its schema's own examples", () => {
    expect(problems(patterns)).toEqual([]);
  });

  it("the check refuses what a zod .regex(/…/u) becomes, and a pattern that refuses its example", () => {
    const app = new OpenAPIHono();
    const body = z.object({
      code: z
        .string()
        .regex(/^[a-z]+$/u)
        .openapi({ example: "abc" }),
      digits: z
        .string()
        .regex(/^[0-9]+$/)
        .openapi({ example: "x1" }),
    });
    const request = { body: { content: { "application/json": { schema: body } } } };
    app.openapi(createRoute({ method: "post", path: "/probe", request, responses: { 204: { description: "Done." } } }), (c) => c.body(null, 204));
    const probe = patterned(app.getOpenAPIDocument({ openapi: "3.0.3", info: { title: "probe", version: "1" } }));
    expect(problems(probe)).toEqual([
      "#/paths/~1probe/post/requestBody/content/application~1json/schema/properties/code: ^[a-z]+$/u ends in flags",
      '#/paths/~1probe/post/requestBody/content/application~1json/schema/properties/digits: ^[0-9]+$ refuses its example "x1"',
    ]);
  });
});
