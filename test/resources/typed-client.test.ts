/**
 * Hono's typed client over the app's route tree (`hc<AppType>`, docs/clients.md):
 * this file is type-checked by `npm run typecheck` (a wrong path,
 * method, input or response field fails `tsc`) and run against the app over a
 * real libSQL file (`app.request` as the client's fetch, no server).
 */
import { hc } from "hono/client";
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from "vitest";
import type { AppType } from "../../src/app";
import { nodeTarget, type NodeTarget } from "../support/node-target";
import { uniqueName } from "../support/client";

let target: NodeTarget;
let client: ReturnType<typeof hc<AppType>>;

beforeAll(async () => {
  target = await nodeTarget();
  client = hc<AppType>("http://localhost", {
    fetch: (input: RequestInfo | URL, init?: RequestInit) => target.app.request(input, init),
    headers: { Authorization: `Bearer ${target.staffKey}` },
  });
});
afterAll(async () => {
  await target?.close();
});

describe("hc<AppType>", () => {
  it("creates a category and reads it back with typed requests and responses", async () => {
    const name = uniqueName("Typed");
    const created = await client.categories.$post({ header: {}, json: { name, description: "From the typed client" } });
    expect(created.status).toBe(201);
    if (created.status !== 201) throw new Error(`POST /categories: ${created.status}`);
    const category = await created.json();
    expectTypeOf(category).toEqualTypeOf<{ id: number; name: string; description?: string | undefined }>();
    expect(category).toEqual({ id: expect.any(Number), name, description: "From the typed client" });

    const read = await client.categories[":categoryId"].$get({ param: { categoryId: String(category.id) } });
    expect(read.status).toBe(200);
    if (read.status !== 200) throw new Error(`GET /categories/${category.id}: ${read.status}`);
    const body = await read.json();
    expectTypeOf(body.id).toEqualTypeOf<number>();
    expect(body).toEqual(category);

    const listed = await client.categories.$get({ query: { limit: "100" } });
    if (listed.status !== 200) throw new Error(`GET /categories: ${listed.status}`);
    expect((await listed.json()).map((c) => c.name)).toContain(name);
  });

  it("error responses are typed as the Error object", async () => {
    const missing = await client.categories[":categoryId"].$get({ param: { categoryId: "9007199254740991" } });
    expect(missing.status).toBe(404);
    if (missing.status !== 404) throw new Error(`expected 404, got ${missing.status}`);
    const error = await missing.json();
    expectTypeOf(error.code).toEqualTypeOf<string>();
    expect(error).toMatchObject({ code: "not_found", status: 404 });
  });

  it("the route tree is typed: an unknown path or a wrong body does not compile", () => {
    // @ts-expect-error: no such route
    void client.nope;
    // @ts-expect-error: name must be a string
    void (() => client.categories.$post({ header: {}, json: { name: 42 } }));
  });
});
