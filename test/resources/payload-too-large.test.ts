/**
 * A body over 64 KiB is 413 `payload_too_large` (docs/api.md), and a client
 * that is still sending it receives that answer (RFC 9112 §9.6): the server
 * reads and discards the rest of the body up to a bound, chunked or not,
 * before it closes the connection, so fetch (undici) sees the 413 instead of
 * a broken pipe. A client that goes away in the middle of its body is logged
 * as such, not as a 500. Against the real server process.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DRAIN_BYTES } from "../../src/middleware/unread-body";
import { startServer, type ServerProcess } from "../support/server-process";

let dir: string;
let server: ServerProcess;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "petstore-413-"));
  server = await startServer({ databaseUrl: `file:${join(dir, "petstore.db")}`, env: { LOG_LEVEL: "info" } });
});

afterAll(async () => {
  if (server && !server.exited()) expect(await server.stop()).toBe(0);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const MB = 1024 * 1024;

/** A body of `bytes` spaces as a stream of 64 KiB chunks: fetch sends it chunked (no Content-Length). */
function chunkedBody(bytes: number): ReadableStream<Uint8Array> {
  const chunk = new Uint8Array(64 * 1024).fill(0x20);
  let sent = 0;
  return new ReadableStream({
    pull(controller) {
      if (sent >= bytes) return controller.close();
      const size = Math.min(chunk.length, bytes - sent);
      controller.enqueue(chunk.slice(0, size));
      sent += size;
    },
  });
}

/** POST /accounts with `body` through fetch; the answer's status and parsed body. */
async function postAccounts(body: ReadableStream<Uint8Array> | Uint8Array): Promise<{ status: number; body: unknown; connection: string | null }> {
  const res = await fetch(`${server.url}/accounts`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body,
    duplex: "half",
    signal: AbortSignal.timeout(20_000),
  } as RequestInit);
  return { status: res.status, body: await res.json(), connection: res.headers.get("connection") };
}

/** A sign-up body padded with trailing spaces (still JSON) to exactly `bytes`, as a stream of two chunks. */
function paddedSignUp(bytes: number): ReadableStream<Uint8Array> {
  const json = JSON.stringify({ name: "Chunked", email: `chunked-${crypto.randomUUID()}@example.com` });
  const whole = new TextEncoder().encode(json.padEnd(bytes, " "));
  const parts = [whole.subarray(0, 1000), whole.subarray(1000)];
  return new ReadableStream({
    pull(controller) {
      const part = parts.shift();
      if (part) controller.enqueue(part);
      else controller.close();
    },
  });
}

describe("a chunked body (no Content-Length) is read up to the limit", () => {
  it("exactly 64 KiB: accepted and judged on its content; one byte more: 413", async () => {
    const accepted = await postAccounts(paddedSignUp(64 * 1024));
    expect(accepted).toMatchObject({ status: 201, body: { account: { name: "Chunked" } } });
    expect(await postAccounts(paddedSignUp(64 * 1024 + 1))).toMatchObject({ status: 413, body: { code: "payload_too_large" } });
  });
});

describe("a body over 64 KiB sent with fetch: the 413 arrives", () => {
  it.each([1 * MB, 6 * MB])("chunked, %d bytes", async (bytes) => {
    expect(bytes).toBeLessThanOrEqual(DRAIN_BYTES);
    const res = await postAccounts(chunkedBody(bytes));
    expect(res).toMatchObject({ status: 413, body: { code: "payload_too_large", status: 413 } });
  });

  it.each([1 * MB, 6 * MB])("with a Content-Length, %d bytes", async (bytes) => {
    const res = await postAccounts(new Uint8Array(bytes).fill(0x20));
    expect(res).toMatchObject({ status: 413, body: { code: "payload_too_large", status: 413 } });
  });

  it("past the drain bound: the server stops reading and closes the connection", async () => {
    // Over a raw socket that writes only as fast as the server reads (backpressure), up to a cap.
    const cap = 8 * DRAIN_BYTES;
    const { hostname, port } = new URL(server.url);
    const head = `POST /accounts HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`;
    const chunk = Buffer.concat([Buffer.from("10000\r\n"), Buffer.alloc(0x10000, 0x20), Buffer.from("\r\n")]);
    const written = await new Promise<number>((resolve) => {
      let bytes = 0;
      let done = false;
      const socket = connect(Number(port), hostname);
      const finish = () => {
        if (done) return;
        done = true;
        socket.destroy();
        resolve(bytes);
      };
      const pump = () => {
        while (!done && bytes < cap) {
          bytes += chunk.length;
          if (!socket.write(chunk)) return void socket.once("drain", pump);
        }
        finish();
      };
      socket.on("connect", () => {
        socket.write(head);
        pump();
      });
      socket.on("error", finish);
      socket.on("close", finish);
    });
    expect(written, "bytes written before the server closed").toBeLessThan(cap);
  });

  it("the server keeps serving", async () => {
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
  });
});

describe("a client that goes away in the middle of its body", () => {
  it("is logged with status 499 (client closed request) at level info, not as a 500 internal_error", async () => {
    const { hostname, port } = new URL(server.url);
    const before = server.output().length;
    // Its own request id, so that its log line is told from other sign-ups' lines.
    const requestId = `gone-${crypto.randomUUID()}`;
    await new Promise<void>((resolve, reject) => {
      const socket = connect(Number(port), hostname, () => {
        const head = `POST /accounts HTTP/1.1\r\nHost: ${hostname}:${port}\r\nX-Request-Id: ${requestId}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n`;
        socket.write(`${head}{"name":"Gone",`, () => socket.destroy());
      });
      socket.on("close", () => resolve());
      socket.on("error", reject);
    });
    // The request line of that request, once the server writes it.
    const line = JSON.parse(await server.line(new RegExp(`"requestId":"${requestId}".*"msg":"request"|"msg":"request".*"requestId":"${requestId}"`), before));
    expect(line).toMatchObject({ level: "info", method: "POST", route: "/accounts", status: 499 });
    expect(server.output().slice(before)).not.toMatch(/internal_error|"status":500|unexpected error/);
  });
});
