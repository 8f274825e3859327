/**
 * A request whose headers or body arrive slower than REQUEST_TIMEOUT_MS (docs/configuration.md) is answered
 * 408 `request_timeout` as an Error object with `Connection: close`, instead of holding its connection for
 * Node's default 300 s: against the real server process (REQUEST_TIMEOUT_MS=1000), over raw sockets.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { RawConnection } from "../support/keep-alive-client";
import { parseResponse } from "../support/raw-http";
import { startServer, type ServerProcess } from "../support/server-process";
import { expectRawError } from "../scenarios/methods.scenarios";

let dir: string;
let server: ServerProcess;
let host: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "petstore-timeout-"));
  server = await startServer({ databaseUrl: `file:${join(dir, "petstore.db")}`, env: { REQUEST_TIMEOUT_MS: "1000" } });
  host = new URL(server.url).host;
});

afterAll(async () => {
  if (server && !server.exited()) expect(await server.stop()).toBe(0);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Open a socket, write `head`, then one byte of `trickle` every 200 ms; resolves with what the server answered once it closes. */
function slowRequest(head: string, trickle = ""): Promise<Buffer> {
  const { port, hostname } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let timer: NodeJS.Timeout | undefined;
    const socket: Socket = connect(Number(port), hostname, () => {
      socket.write(head);
      let sent = 0;
      timer = setInterval(() => {
        if (sent < trickle.length && socket.writable) socket.write(trickle[sent++]!);
      }, 200);
    });
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", (error: NodeJS.ErrnoException) => (error.code === "ECONNRESET" || error.code === "EPIPE" ? undefined : reject(error)));
    socket.on("close", () => {
      clearInterval(timer);
      resolve(Buffer.concat(chunks));
    });
  });
}

it("answers a body that trickles in 408 request_timeout with Connection: close", async () => {
  const body = '{"name":"Slow","email":"slow@example.com"}';
  const head = `POST /accounts HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`;
  const res = parseResponse((await slowRequest(head, body)).toString("latin1"))!;
  expectRawError(res, 408, "request_timeout");
  expect(res.headers.connection).toBe("close");
}, 15_000);

it("answers headers that never finish 408 request_timeout", async () => {
  const res = parseResponse(
    (await slowRequest(`GET /health HTTP/1.1\r\nHost: ${host}\r\n`, "X-Slow: 1234567890123456789012345678901234567890")).toString("latin1"),
  )!;
  expectRawError(res, 408, "request_timeout");
}, 15_000);

it("still serves a request that arrives in time", async () => {
  expect((await fetch(`${server.url}/health`)).status).toBe(200);
});

it("on SIGTERM answers a request whose body is still arriving 503 with Connection: close before the process exits", async () => {
  const own = await startServer({ databaseUrl: `file:${join(dir, "stopping.db")}` });
  const { port, hostname } = new URL(own.url);
  const received: Buffer[] = [];
  const socket = connect(Number(port), hostname);
  const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()));
  socket.on("error", () => {});
  const continued = new Promise<void>((resolve) =>
    socket.on("data", (chunk: Buffer) => {
      received.push(chunk);
      if (Buffer.concat(received).toString("latin1").includes("100 Continue")) resolve();
    }),
  );
  // Expect: 100-continue: Node sends 100 once the request has reached the app, so the stop finds it there.
  socket.write(
    `POST /accounts HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Type: application/json\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n{"name":`,
  );
  await continued;
  const exited = own.stop();
  await closed;
  const text = Buffer.concat(received).toString("latin1");
  const res = parseResponse(text.slice(text.indexOf("HTTP/1.1", 1)))!;
  expectRawError(res, 503, "service_unavailable");
  expect(res.headers.connection).toBe("close");
  expect(await exited).toBe(0);
}, 20_000);

it("refuses an address's slow requests past MAX_UNFINISHED_PER_ADDRESS: 429 rate_limited, and serves it again", async () => {
  const own = await startServer({ databaseUrl: `file:${join(dir, "capped.db")}`, env: { MAX_UNFINISHED_PER_ADDRESS: "2" } });
  try {
    const { port, hostname } = new URL(own.url);
    const line = `GET /health HTTP/1.1\r\nHost: ${hostname}:${port}\r\n`;
    // Three connections whose headers do not finish: past the grace, the third to count is refused and closed.
    const connections = await Promise.all([0, 1, 2].map(() => RawConnection.open(Number(port))));
    for (const connection of connections) connection.write(line);
    const first = await Promise.race(connections.map((connection) => connection.ended.then((ended) => ({ connection, ...ended }))));
    const refused = parseResponse(first.unread);
    expect(refused, `an answer before the connection closed: ${first.unread}`).toBeDefined();
    expectRawError(refused!, 429, "rate_limited");
    expect(refused!.headers["retry-after"]).toBe("1");
    // The other two, within the cap, were not refused: their headers finished now, each is served on its connection.
    const within = connections.filter((connection) => connection !== first.connection);
    expect((await Promise.all(within.map((connection) => connection.send("\r\n")))).map((answer) => answer.status)).toEqual([200, 200]);
    for (const connection of connections) connection.socket.destroy();
    // A burst within the grace is never refused.
    const burst = await Promise.all(Array.from({ length: 10 }, () => fetch(`${own.url}/health`)));
    expect(burst.map((res) => res.status)).toEqual(Array(10).fill(200));
  } finally {
    await own.stop();
  }
}, 20_000);
