/**
 * What Node's HTTP server refuses before the app runs gets an Error object
 * (src/runtime/node-client-error.ts), and a refusal that leaves a request body
 * unread never leaves a keep-alive client waiting for an answer that will not
 * come (RFC 9112 §9.6): against the real server process, over raw sockets.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rawExchange, type RawResponse } from "../support/raw-http";
import { startServer, type ServerProcess } from "../support/server-process";
import { expectRawError } from "../scenarios/methods.scenarios";

let dir: string;
let server: ServerProcess;
let host: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "petstore-refusals-"));
  server = await startServer({ databaseUrl: `file:${join(dir, "petstore.db")}` });
  host = new URL(server.url).host;
});

afterAll(async () => {
  if (server && !server.exited()) expect(await server.stop()).toBe(0);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function expectClosingError(res: RawResponse, status: number, code: string): void {
  expectRawError(res, status, code);
  expect(res.headers.connection).toBe("close");
}

describe("requests Node's parser refuses get an Error object and Connection: close", () => {
  it("an over-long header → 431 header_too_large", async () => {
    const res = await rawExchange(server.url, `GET /pets HTTP/1.1\r\nHost: ${host}\r\nX-Long: ${"a".repeat(20_000)}\r\n\r\n`);
    expectClosingError(res, 431, "header_too_large");
  });

  it("an over-long query → 431 header_too_large", async () => {
    const res = await rawExchange(server.url, `GET /pets?name=${"a".repeat(20_000)} HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
    expectClosingError(res, 431, "header_too_large");
  });

  it("an HTTP/1.1 request without Host → 400 bad_request", async () => {
    const res = await rawExchange(server.url, "GET /pets HTTP/1.1\r\nAccept: application/json\r\n\r\n");
    expectClosingError(res, 400, "bad_request");
  });

  it.each([
    ["a NUL byte", Buffer.from([0x2f, 0x70, 0x00, 0x74, 0x73])],
    ["a non-ASCII byte", Buffer.from([0x2f, 0x70, 0xe9, 0x74, 0x73])],
    ["a space inside", Buffer.from("/pets HTTP/1.1 extra", "latin1")],
  ])("a target with %s → 400 bad_request", async (_what, target) => {
    const res = await rawExchange(server.url, Buffer.concat([Buffer.from("GET "), target, Buffer.from(` HTTP/1.1\r\nHost: ${host}\r\n\r\n`)]));
    expectClosingError(res, 400, "bad_request");
  });

  it("bad chunked framing → 400 bad_request", async () => {
    const res = await rawExchange(
      server.url,
      `POST /accounts HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`,
    );
    expectClosingError(res, 400, "bad_request");
  });

  it("the server keeps serving afterwards", async () => {
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
  });
});
