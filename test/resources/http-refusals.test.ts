/**
 * What Node's HTTP server refuses before the app runs gets an Error object
 * (src/runtime/node/client-error.ts), and a refusal that leaves a request body
 * unread never leaves a keep-alive client waiting for an answer that will not
 * come (RFC 9112 §9.6): against the real server process, over raw sockets.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseResponse, rawExchange, type RawResponse } from "../support/raw-http";
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
    ["a Host that is no host", `GET /health HTTP/1.1\r\nHost: a b/c\r\n\r\n`],
    ["an absolute-form target", `GET http://example.com/health HTTP/1.1\r\nHost: example.com\r\n\r\n`],
    ["a backslash in the path", `GET /pets\\x HTTP/1.1\r\nHost: example.com\r\n\r\n`],
  ])("%s → 400 bad_request (the adapter's empty 400 before)", async (_what, request) => {
    expectClosingError(await rawExchange(server.url, request), 400, "bad_request");
  });

  it.each([
    ["two Host headers", `GET /health HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n`],
    ["the same Host twice", `GET /health HTTP/1.1\r\nHost: a.example\r\nhost: a.example\r\n\r\n`],
    ["two Host headers on HTTP/1.0", `GET /health HTTP/1.0\r\nHost: a.example\r\nHost: b.example\r\n\r\n`],
  ])("%s → 400 bad_request (RFC 9112 §3.2; served with the first Host before)", async (_what, request) => {
    const res = await rawExchange(server.url, request);
    expectClosingError(res, 400, "bad_request");
    expect(res.body.message).toMatch(/more than one Host/);
  });

  it("an HTTP/1.0 request without Host is served", async () => {
    const res = await rawExchange(server.url, "GET /health HTTP/1.0\r\n\r\n");
    expect([res.status, res.body]).toEqual([200, { status: "ok" }]);
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

  it("an Expect other than 100-continue → 417 expectation_failed (not Node's bare 417 on a kept connection)", async () => {
    const res = await rawExchange(server.url, `GET /health HTTP/1.1\r\nHost: ${host}\r\nExpect: 200-ok\r\n\r\n`);
    expectClosingError(res, 417, "expectation_failed");
    expect(res.headers["x-request-id"]).toBeTruthy();
  });

  it("a transfer coding other than chunked → 501 not_implemented naming it (RFC 9112 §6.1), not a body read as plain JSON", async () => {
    const body = '{"name":"Coded","email":"coded@example.com"}';
    const chunk = `${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`;
    const res = await rawExchange(
      server.url,
      `POST /accounts HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip, chunked\r\n\r\n${chunk}`,
    );
    expectClosingError(res, 501, "not_implemented");
    expect((res.body as { message: string }).message).toContain("gzip");
  });

  it("a content coding other than identity → 415 unsupported_media_type naming the header, with Accept-Encoding: identity", async () => {
    const body = '{"name":"Coded","email":"coded2@example.com"}';
    const res = await rawExchange(
      server.url,
      `POST /accounts HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    expectRawError(res, 415, "unsupported_media_type");
    expect((res.body as { message: string }).message).toContain("Content-Encoding gzip");
    expect(res.headers["accept-encoding"]).toBe("identity");
    const plain = await rawExchange(
      server.url,
      `POST /accounts HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Encoding: identity\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
    expect(plain.status).toBe(201);
  });

  it("the server keeps serving afterwards", async () => {
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
  });
});

/**
 * Send `first` then `second` on one keep-alive connection, as a pooled client
 * would, and collect every response until the server closes the connection
 * (or `idleMs` pass with nothing more to read).
 */
function pipelined(first: Buffer, second: string, idleMs = 3_000): Promise<{ responses: RawResponse[]; closed: boolean }> {
  const url = new URL(server.url);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let timer: NodeJS.Timeout | undefined;
    const finish = (closed: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      const text = Buffer.concat(chunks).toString("latin1");
      const responses: RawResponse[] = [];
      for (let rest = text; rest.startsWith("HTTP/1.1"); ) {
        const parsed = parseResponse(rest);
        if (!parsed) break;
        responses.push(parsed);
        const length = Number(parsed.headers["content-length"] ?? 0);
        rest = rest.slice(rest.indexOf("\r\n\r\n") + 4 + length);
      }
      resolve({ responses, closed });
    };
    const idle = () => {
      clearTimeout(timer);
      timer = setTimeout(() => finish(false), idleMs);
    };
    const socket = connect(Number(url.port), url.hostname, () => {
      socket.write(first, () => socket.write(second));
      idle();
    });
    socket.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      idle();
    });
    socket.on("error", (error: NodeJS.ErrnoException) => (error.code === "ECONNRESET" || error.code === "EPIPE" ? finish(true) : reject(error)));
    socket.on("close", () => finish(true));
  });
}

describe("a refusal that leaves the body unread (RFC 9112 §9.6)", () => {
  const next = () => `GET /health HTTP/1.1\r\nHost: ${host}\r\n\r\n`;

  it.each([64 * 1024 + 1, 1024 * 1024, 4 * 1024 * 1024])(
    "a %d-byte body: 413, and the next request is answered or the 413 said Connection: close",
    async (size) => {
      const body = Buffer.alloc(size, 0x20);
      const head = `POST /accounts HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: ${size}\r\n\r\n`;
      const { responses, closed } = await pipelined(Buffer.concat([Buffer.from(head), body]), next());
      expect(responses.length, "the 413 arrives").toBeGreaterThanOrEqual(1);
      expectRawError(responses[0]!, 413, "payload_too_large");
      if (responses.length === 1) {
        // The second request was never answered: the server must have said so and closed.
        expect(responses[0]!.headers.connection).toBe("close");
        expect(closed).toBe(true);
      } else {
        expect(responses[0]!.headers.connection).not.toBe("close");
        expect(responses[1]!.status).toBe(200);
      }
    },
  );

  it("a chunked body past 64 KiB (no Content-Length): 413 once the limit is read", async () => {
    const chunk = Buffer.alloc(16 * 1024, 0x20);
    const chunks = Array.from({ length: 5 }, () => Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from("\r\n")]));
    const head = `POST /accounts HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`;
    const { responses } = await pipelined(Buffer.concat([Buffer.from(head), ...chunks, Buffer.from("0\r\n\r\n")]), next());
    expectRawError(responses[0]!, 413, "payload_too_large");
  });

  it("a 401 before an unread 60 KiB body: the next request is answered or the 401 said Connection: close", async () => {
    const size = 60 * 1024;
    const head = `POST /categories HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: ${size}\r\n\r\n`;
    const { responses, closed } = await pipelined(Buffer.concat([Buffer.from(head), Buffer.alloc(size, 0x20)]), next());
    expectRawError(responses[0]!, 401, "unauthorized");
    if (responses.length === 1) {
      expect(responses[0]!.headers.connection).toBe("close");
      expect(closed).toBe(true);
    } else expect(responses[1]!.status).toBe(200);
  });
});
