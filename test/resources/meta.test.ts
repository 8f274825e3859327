/** Runs the meta scenarios against the Node app, plus Node-only checks of configuration and failures. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect } from "../support/client";
import { nodeTarget, type NodeTarget } from "../support/node-target";
import { metaScenarios } from "../scenarios/meta.scenarios";

let target: NodeTarget;
beforeAll(async () => {
  target = await nodeTarget();
});
afterAll(async () => {
  await target?.close();
});

metaScenarios(() => target);

describe("meta (Node only)", () => {
  it("uses PUBLIC_BASE_URL as the default of the base_url server variable", async () => {
    const configured = await nodeTarget({ PUBLIC_BASE_URL: "https://petstore.example.com" });
    try {
      const document = await (await configured.fetch("/openapi.json")).json();
      expect(document.servers).toEqual([
        {
          url: "{base_url}",
          description: expect.any(String),
          variables: { base_url: { default: "https://petstore.example.com", description: expect.any(String) } },
        },
      ]);
    } finally {
      await configured.close();
    }
  });

  it("defaults base_url to the request's origin", async () => {
    const document = await (await target.app.request("https://api.example.org/openapi.json")).json();
    expect(document.servers[0].variables.base_url.default).toBe("https://api.example.org");
  });

  it("answers 503 database_unavailable from /health and reads when the database is gone", async () => {
    const broken = await nodeTarget();
    try {
      const api = await connect(broken);
      await broken.db.close();
      for (const path of ["/health", "/pets", "/categories/1"]) {
        const res = await api.get(path);
        expect(res.status, path).toBe(503);
        expect(res.body.code).toBe("database_unavailable");
        expect(res.headers.get("x-request-id")).toBe(res.body.requestId);
      }
    } finally {
      await broken.close();
    }
  });

  it("turns an unexpected failure into 500 internal_error: no stack, no SQL, a requestId to quote, logged", async () => {
    const lines: string[] = [];
    const broken = await nodeTarget({}, { log: (line) => lines.push(line) });
    try {
      const api = await connect(broken);
      await broken.db.execute("DROP TABLE inventory"); // a real database fault, no mock
      const res = await api.get("/store/inventory");
      expect(res.status).toBe(500);
      expect(Object.keys(res.body).sort()).toEqual(["code", "message", "requestId", "status"]);
      expect(res.body.code).toBe("internal_error");
      expect(res.body.message).not.toMatch(/sql|inventory|table|select|\bat\b|\.ts/i);
      expect(res.headers.get("x-request-id")).toBe(res.body.requestId);
      expect(lines.some((line) => line.includes(res.body.requestId))).toBe(true);
    } finally {
      await broken.close();
    }
  });
});
