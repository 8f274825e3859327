/**
 * The served document and the server agree on request bodies: the example
 * the document gives for every operation with a request body (its media-type
 * example, else one built from the schema's property examples) is accepted,
 * and a body the server refuses as invalid (`{}` on a PATCH) is one the
 * document's schema refuses too (`minProperties: 1`).
 */
import SwaggerParser from "@apidevtools/swagger-parser";
import Ajv from "ajv";
import addFormats from "ajv-formats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nodeTarget, type NodeTarget } from "../support/node-target";

type Schema = {
  type?: string;
  example?: unknown;
  enum?: unknown[];
  properties?: Record<string, Schema>;
  required?: string[];
  allOf?: Schema[];
  items?: Schema;
};
type Operation = { requestBody?: { content: Record<string, { schema: Schema; example?: unknown }> } };

let target: NodeTarget;
let operations: { method: string; path: string; schema: Schema; example: unknown }[];

/** The example of `schema`: its own, else an object of its properties' examples (required ones always). */
function exampleOf(schema: Schema): unknown {
  if (schema.example !== undefined) return schema.example;
  if (schema.enum) return schema.enum[0];
  if (schema.allOf) return Object.assign({}, ...schema.allOf.map(exampleOf));
  if (schema.type === "object" || schema.properties) {
    const example: Record<string, unknown> = {};
    for (const [name, property] of Object.entries(schema.properties ?? {})) {
      const value = exampleOf(property);
      if (value !== undefined) example[name] = value;
      else if (schema.required?.includes(name)) throw new Error(`no example for the required property ${name}`);
    }
    return example;
  }
  if (schema.type === "array" && schema.items) return [exampleOf(schema.items)];
  return undefined;
}

beforeAll(async () => {
  target = await nodeTarget();
  const document = await (await target.fetch("/openapi.json")).json();
  const api = (await SwaggerParser.dereference(document)) as unknown as { paths: Record<string, Record<string, Operation>> };
  operations = [];
  for (const [path, ops] of Object.entries(api.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const media = op.requestBody?.content["application/json"];
      if (media) operations.push({ method: method.toUpperCase(), path, schema: media.schema, example: media.example ?? exampleOf(media.schema) });
    }
  }
});
afterAll(async () => {
  await target?.close();
});

/**
 * `path` with every `{…Id}` parameter set to 1, the first resource of each kind, created in order below; but `{eventId}` 3, the
 * `pet.created` of POST /pets (after the category's created and updated events), a type the example subscription wants.
 */
const concrete = (path: string) => path.replace("{eventId}", "3").replace(/\{[A-Za-z]+\}/g, "1");

/** Operations in an order where each one's example finds what it refers to (category 1, pet 1, order 1). */
const ORDER = [
  "POST /categories",
  "PATCH /categories/{categoryId}",
  "POST /pets",
  "PUT /pets/{petId}",
  "PATCH /pets/{petId}",
  "PUT /store/inventory/{petId}",
  "POST /store/orders",
  "PATCH /store/orders/{orderId}",
  "POST /accounts",
  "POST /accounts/me/keys",
  "POST /webhooks",
  "PATCH /webhooks/{webhookId}",
  "POST /webhooks/{webhookId}/secret/rotate",
  "POST /webhooks/{webhookId}/recover",
  "POST /webhooks/{webhookId}/test",
  "POST /webhooks/{webhookId}/events/{eventId}/resend",
];

describe("request bodies of the served document", () => {
  it("the document's example of every operation with a request body is accepted", async () => {
    expect(operations.map((o) => `${o.method} ${o.path}`).sort()).toEqual([...ORDER].sort());
    for (const name of ORDER) {
      const op = operations.find((o) => `${o.method} ${o.path}` === name)!;
      const res = await target.fetch(concrete(op.path), {
        method: op.method,
        headers: { Authorization: `Bearer ${target.staffKey}`, "Content-Type": "application/json" },
        body: JSON.stringify(op.example),
      });
      expect(res.status, `${name} ${JSON.stringify(op.example)} → ${await res.clone().text()}`).toBeLessThan(300);
    }
  });

  it("an empty object is refused by the server exactly where the document's schema refuses it", async () => {
    const ajv = new Ajv({ strict: false });
    addFormats(ajv);
    for (const op of operations) {
      const documentAccepts = ajv.validate(op.schema, {});
      const res = await target.fetch(concrete(op.path), {
        method: op.method,
        headers: { Authorization: `Bearer ${target.staffKey}`, "Content-Type": "application/json" },
        body: "{}",
      });
      const serverRefusesAsInvalid = res.status === 400;
      expect(serverRefusesAsInvalid, `${op.method} ${op.path}: document accepts {}: ${documentAccepts}, server answered ${res.status}`).toBe(!documentAccepts);
    }
  });
});
