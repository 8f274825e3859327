/**
 * The method scenarios (issue 11) against the Node server as a child process,
 * over raw sockets; plus what only Node's own HTTP server sees: a method its
 * parser does not know (`FOO`: a parse error, by default a bare 400 with no
 * body) and CONNECT (by default the connection is just closed). Both are 501
 * Error objects now (src/runtime/node/client-error.ts, node-unknown-methods.ts).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rawRequest } from "../support/raw-http";
import { startServer, type ServerProcess } from "../support/server-process";
import { expectRawError, methodScenarios } from "../scenarios/methods.scenarios";

let dir: string;
let server: ServerProcess;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "petstore-methods-"));
  server = await startServer({ databaseUrl: `file:${join(dir, "petstore.db")}` });
});

afterAll(async () => {
  if (server && !server.exited()) expect(await server.stop()).toBe(0);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

methodScenarios(() => ({ url: server.url }));

describe("methods Node's HTTP server answers before the app", () => {
  it.each([
    ["FOO", "/pets"],
    ["FOO", "/nope"],
    ["BREW", "/pets"],
    ["TRACK", "/pets"],
    ["CONNECT", "127.0.0.1:80"],
    ["CONNECT", "example.com:443"],
  ])("%s %s → 501 not_implemented, an Error object", async (method, target) => {
    const res = await rawRequest(server.url, method, target);
    expectRawError(res, 501, "not_implemented");
    expect(res.body.message).toContain(method);
  });

  it("other malformed requests are 400 bad_request Error objects, and the server keeps serving", async () => {
    const res = await rawRequest(server.url, "GET", "/pets HTTP/1.1 extra");
    expectRawError(res, 400, "bad_request");
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
  });
});
