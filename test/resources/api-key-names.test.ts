/**
 * Names of API keys (docs/api.md#authentication): a key created without a name is named
 * "default", like the key a sign-up creates, whether the body is absent, empty
 * or has no `name`; the document states that default.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiClient, connect, uniqueName } from "../support/client";
import { nodeTarget, type NodeTarget } from "../support/node-target";

let target: NodeTarget;
let api: ApiClient;
let key: string;

beforeAll(async () => {
  target = await nodeTarget();
  api = await connect(target);
  const name = uniqueName("Keys");
  const signUp = await api.post("/accounts", { name, email: `${name.replaceAll(/\W/g, "-")}@example.com` });
  expect(signUp.status).toBe(201);
  expect(signUp.body.apiKey.name).toBe("default");
  key = signUp.body.apiKey.key;
});
afterAll(async () => {
  await target?.close();
});

describe("POST /accounts/me/keys names", () => {
  it('names a key "default" when the body has no name, is empty, or is absent', async () => {
    const noName = await api.post("/accounts/me/keys", {}, { key });
    expect(noName.status).toBe(201);
    expect(noName.body.name).toBe("default");

    const noBody = await api.post("/accounts/me/keys", undefined, { key });
    expect(noBody.status).toBe(201);
    expect(noBody.body.name).toBe("default");

    const named = await api.post("/accounts/me/keys", { name: " ci " }, { key });
    expect(named.status).toBe(201);
    expect(named.body.name).toBe("ci");

    const listed = await api.get("/accounts/me/keys", { key });
    expect(listed.body.map((k: { name: string }) => k.name)).toEqual(["default", "default", "default", "ci"]);
  });

  it("documents the default in NewApiKeyRequest", async () => {
    const document = (await api.get("/openapi.json")).body;
    expect(document.components.schemas.NewApiKeyRequest.properties.name.default).toBe("default");
  });
});
