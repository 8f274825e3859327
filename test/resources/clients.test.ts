/**
 * The typed-client examples of docs/clients.md (examples/clients/*), compiled
 * by `npm run typecheck` and run here against the app over a temp libSQL file
 * (`app.request` as their fetch, no server): each completes a purchase, gets
 * the Error object of a refused request, runs again on the same database
 * (fresh names: no state shared between runs or examples) and throws the
 * Error object of any unexpected non-2xx. The openapi-fetch example's types
 * must be what openapi-typescript generates from the served document now.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { honoClientExample, PetstoreApiError } from "../../examples/clients/hono-client";
import { OpenApiError, openapiFetchExample } from "../../examples/clients/openapi-fetch-client";
import { generateOpenApiTypes, OPENAPI_TYPES_PATH } from "../../scripts/openapi-types";
import { nodeTarget, type NodeTarget } from "../support/node-target";

let target: NodeTarget;
/** The in-process app as the examples' fetch. */
let appFetch: (input: Request | string | URL, init?: RequestInit) => Promise<Response>;

beforeAll(async () => {
  target = await nodeTarget();
  appFetch = async (input, init) => target.app.request(input, init);
});
afterAll(async () => {
  await target?.close();
});

const EXAMPLES = [
  { name: "hono/client hc<AppType>", run: honoClientExample, ErrorClass: PetstoreApiError },
  { name: "openapi-fetch + openapi-typescript", run: openapiFetchExample, ErrorClass: OpenApiError },
] as const;

describe.each(EXAMPLES)("$name example", ({ run, ErrorClass }) => {
  it("places an order and gets the Error object of a refused request, twice on one database", async () => {
    for (let i = 0; i < 2; i++) {
      const result = await run({ baseUrl: "http://localhost", staffKey: target.staffKey, fetch: appFetch });
      expect(result.pet.categoryId).toBe(result.category.id);
      expect(result.order).toMatchObject({ id: expect.any(Number), petId: result.pet.id, quantity: 1, complete: false });
      expect(result.account.id).toEqual(expect.any(Number));
      expect(result.refused).toMatchObject({ code: "forbidden", status: 403, message: expect.any(String) });
    }
  });

  it("throws the Error object of an unexpected non-2xx answer", async () => {
    const error = await run({ baseUrl: "http://localhost", staffKey: "psk_not-a-key", fetch: appFetch }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ErrorClass);
    expect((error as InstanceType<typeof ErrorClass>).body).toMatchObject({ code: "unauthorized", status: 401, message: expect.any(String) });
  });
});

describe("examples/clients/petstore-api.d.ts", () => {
  it("is what openapi-typescript generates from the served document (npm run clients:types)", async () => {
    expect(await generateOpenApiTypes()).toBe(readFileSync(OPENAPI_TYPES_PATH, "utf8"));
  });
});
