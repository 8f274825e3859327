/**
 * Requests whose headers are still arriving (issue 47): on a keep-alive connection that has already served one
 * they count for MAX_UNFINISHED_PER_ADDRESS like those on fresh connections, and on SIGTERM they are answered 503
 * like a body still arriving, one process or several. Against the real server process, over raw sockets;
 * REQUEST_TIMEOUT_MS is long, so no answer here comes from the request timeout.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RawConnection } from "../support/keep-alive-client";
import { parseResponse } from "../support/raw-http";
import { startServer, type ServerProcess } from "../support/server-process";
import { expectRawError } from "../scenarios/methods.scenarios";

let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "petstore-unfinished-"));
});
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** A server on its own database in `dir` whose request timeout (60 s) answers nothing within a test. */
function start(name: string, env: Record<string, string>): Promise<ServerProcess> {
  return startServer({ databaseUrl: `file:${join(dir, `${name}.db`)}`, env: { REQUEST_TIMEOUT_MS: "60000", ...env } });
}

/**
 * The first `count` of `connections` the server closes, in the order it closed them, with what each received;
 * waits for the closes themselves, however busy the machine (the test's timeout bounds it).
 */
async function firstClosed(connections: RawConnection[], count: number): Promise<{ connection: RawConnection; unread: string }[]> {
  const closed: { connection: RawConnection; unread: string }[] = [];
  await new Promise<void>((resolve) => {
    for (const connection of connections)
      void connection.ended.then(({ unread }) => {
        closed.push({ connection, unread });
        if (closed.length === count) resolve();
      });
  });
  return closed.slice(0, count);
}

it("refuses slow headers on reused keep-alive connections past the cap: 429 rate_limited, long before the request timeout", async () => {
  const server = await start("capped", { MAX_UNFINISHED_PER_ADDRESS: "5" });
  const { port } = new URL(server.url);
  const connections = await Promise.all(Array.from({ length: 8 }, () => RawConnection.open(Number(port))));
  const served = await Promise.all(connections.map((c) => c.send("GET /health HTTP/1.1\r\nHost: a\r\n\r\n")));
  expect(served.map((answer) => answer.status)).toEqual(Array(8).fill(200));
  for (const connection of connections) connection.write("GET /health HTTP/1.1\r\nHost: a\r\nX-Slow: ");
  // Counted 1 s after they begin (the grace): the three past the cap are answered and closed, long before the 60 s timeout.
  const refused = await firstClosed(connections, 3);
  for (const { unread } of refused) {
    const res = parseResponse(unread);
    expect(res, `an answer before the connection closed: ${unread}`).toBeDefined();
    expectRawError(res!, 429, "rate_limited");
    expect(res!.headers.connection).toBe("close");
  }
  // The other five, within the cap, were not refused: their headers finished now, each is served on its connection.
  const within = connections.filter((c) => !refused.some((r) => r.connection === c));
  const finished = await Promise.all(within.map((c) => c.send("1\r\n\r\n")));
  expect(finished.map((answer) => answer.status)).toEqual(Array(5).fill(200));
  for (const connection of connections) connection.socket.destroy();
  expect(await server.stop()).toBe(0);
}, 20_000);

describe("SIGTERM while a request's headers are still arriving", () => {
  it.each([
    ["one process", {}],
    ["a cluster", { WEB_CONCURRENCY: "2" }],
  ])(
    "%s: answers 503 service_unavailable with Connection: close, on a fresh and on a reused connection, and exits 0",
    async (what, env) => {
      const own = await start(`stop-${what.length}`, env);
      const port = Number(new URL(own.url).port);
      const fresh = await RawConnection.open(port);
      const reused = await RawConnection.open(port);
      expect((await reused.send("GET /health HTTP/1.1\r\nHost: a\r\n\r\n")).status).toBe(200);
      for (const connection of [fresh, reused]) connection.write("GET /health HTTP/1.1\r\nHost: a\r\nX-Slow: ");
      const exited = own.stop();
      for (const connection of [fresh, reused]) {
        const ended = await connection.ended;
        const res = parseResponse(ended.unread);
        expect(res, `an answer before the connection closed: ${JSON.stringify(ended)}`).toBeDefined();
        expectRawError(res!, 503, "service_unavailable");
        expect(res!.headers.connection).toBe("close");
        expect(res!.headers["retry-after"]).toBe("1");
      }
      expect(await exited).toBe(0);
    },
    30_000,
  );
});
