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

/** What `connection` received before it closed, or undefined when it is still open after `ms` (then it is closed). */
async function answerWithin(connection: RawConnection, ms: number): Promise<string | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const open = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  const ended = await Promise.race([connection.ended, open]);
  clearTimeout(timer);
  connection.socket.destroy();
  return ended?.unread;
}

it("refuses slow headers on reused keep-alive connections past the cap: 429 rate_limited, long before the request timeout", async () => {
  const server = await start("capped", { MAX_UNFINISHED_PER_ADDRESS: "5" });
  const { port } = new URL(server.url);
  const connections = await Promise.all(Array.from({ length: 8 }, () => RawConnection.open(Number(port))));
  const served = await Promise.all(connections.map((c) => c.send("GET /health HTTP/1.1\r\nHost: a\r\n\r\n")));
  expect(served.map((answer) => answer.status)).toEqual(Array(8).fill(200));
  for (const connection of connections) connection.write("GET /health HTTP/1.1\r\nHost: a\r\nX-Slow: ");
  // Counted 1 s after they begin (the grace), found within a second more: 5 s leaves room on a busy machine, 60 s is the timeout.
  const texts = await Promise.all(connections.map((c) => answerWithin(c, 5_000)));
  const refused = texts.filter((text) => text !== undefined).map((text) => parseResponse(text!));
  expect(refused, "answers before the request timeout").toHaveLength(3);
  for (const res of refused) {
    expectRawError(res!, 429, "rate_limited");
    expect(res!.headers.connection).toBe("close");
  }
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
