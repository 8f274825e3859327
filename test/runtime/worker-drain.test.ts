/**
 * One server process of a cluster stopped gracefully while clients keep
 * their keep-alive connections busy (a rolling restart: SIGTERM to one
 * worker). The stopped process answers every request that reached it (with
 * `Connection: close` once it is stopping, a request half sent before the
 * stop included), closes its idle connections cleanly and exits 0; the
 * primary starts another. Clients (raw sockets, one request at a
 * time, the next written as soon as an answer is complete) never write after
 * the server's close, so every request written must get a complete answer and
 * no socket may see an error. Nothing is timed: the stop is sent once every
 * client has had its answers, and the test waits for the primary's line about
 * the exit.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KeepAliveClient, RawConnection, serverProcessOf } from "../support/keep-alive-client";
import { childrenOf } from "../support/processes";
import { call, startServer, type ServerProcess } from "../support/server-process";

const CLIENTS = 8;
/** Answers each client has had before the stop, and after the stopped process has exited. */
const BEFORE_STOP = 30;
const AFTER_EXIT = 20;

let dir: string;
let server: ServerProcess;
let staff: string;
let petId: number;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "petstore-drain-"));
  server = await startServer({ databaseUrl: `file:${join(dir, "drain.db")}`, env: { WEB_CONCURRENCY: "2" } });
  staff = server.bootstrapKey!;
  const category = await call(server.url, "POST", "/categories", { name: "Drained" }, { key: staff });
  petId = (await call(server.url, "POST", "/pets", { name: "Steady", categoryId: category.body.id }, { key: staff })).body.id;
}, 120_000);

afterAll(async () => {
  if (server && !server.exited()) await server.kill();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("one server process of a cluster stopped under keep-alive load", { timeout: 60_000 }, () => {
  it("answers every request that reached it, resets no connection, exits 0 and is replaced", async () => {
    const { hostname, port } = new URL(server.url);
    const host = `${hostname}:${port}`;
    // Mostly cached reads (fast, so connections are rarely idle), every 4th a write that commits.
    const request = (client: number) => (n: number) =>
      n % 4 === 3
        ? (() => {
            const body = JSON.stringify({ name: `c${client}-${n}` });
            return `POST /categories HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${staff}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
          })()
        : `GET /pets/${petId} HTTP/1.1\r\nHost: ${host}\r\n\r\n`;
    const clients = Array.from({ length: CLIENTS }, (_, i) => new KeepAliveClient(Number(port), request(i)));
    try {
      await Promise.all(clients.map((c) => c.answers(BEFORE_STOP)));

      // The worker holding most of the clients' connections is stopped.
      const workers = childrenOf(server.pid);
      expect(workers).toHaveLength(2);
      const holders = clients.map((c) => serverProcessOf(c.currentPort()!, Number(port), workers));
      const target = workers.reduce((a, b) => (holders.filter((h) => h === b).length > holders.filter((h) => h === a).length ? b : a));
      const onTarget = clients.filter((_, i) => holders[i] === target).map((c) => c.currentPort()!);
      expect(onTarget.length, "connections on the stopped process").toBeGreaterThan(0);

      // Two more connections on it: one left idle after an answer, one with a sign-up half sent.
      const get = `GET /pets/${petId} HTTP/1.1\r\nHost: ${host}\r\n\r\n`;
      const connectionOnTarget = async () => {
        for (let tries = 0; tries < 10; tries++) {
          const connection = await RawConnection.open(Number(port));
          const answer = await connection.send(get);
          expect(answer.head).not.toMatch(/connection: close/i);
          if (serverProcessOf(connection.localPort, Number(port), workers) === target) return connection;
          connection.socket.end();
        }
        throw new Error(`no connection reached process ${target} in 10 tries`);
      };
      const idle = await connectionOnTarget();
      const half = await connectionOnTarget();
      const signUp = JSON.stringify({ name: "Half", email: "half-sent@example.com" });
      const signUpAnswer = half.send(
        `POST /accounts HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: ${signUp.length}\r\n\r\n${signUp.slice(0, 10)}`,
      );

      const from = server.output().length;
      process.kill(target, "SIGTERM");
      await server.line(/^SIGTERM: closing$/, from);
      // The request that had begun to arrive is answered, with Connection: close, and its connection closed.
      half.write(signUp.slice(10));
      const answered = await signUpAnswer;
      expect.soft(answered.status).toBe(201);
      expect.soft(answered.head).toMatch(/\r\nconnection: close/i);
      expect.soft(await half.ended).toEqual({ clean: true, error: undefined, unread: "" });
      // The idle connection takes no new request: it is closed, cleanly.
      expect.soft(await idle.ended).toEqual({ clean: true, error: undefined, unread: "" });
      const exited = await server.line(new RegExp(`server process ${target} exited`), from, 20_000);
      expect(exited).toMatch(/exited \(0\); starting another/);

      // The surviving process keeps answering; then every client stops.
      await Promise.all(clients.map((c) => c.answers(c.answered + AFTER_EXIT)));
    } finally {
      await Promise.all(clients.map((c) => c.finish()));
    }

    const connections = clients.flatMap((c) => c.connections);
    const troubled = connections.filter((c) => c.unanswered > 0 || c.errors.length > 0);
    expect(troubled, "connections with a request unanswered or a socket error").toEqual([]);
    const closedByServer = connections.filter((c) => c.cleanClose || c.closeAnswers > 0);
    expect(closedByServer.length, "connections the stopped process closed").toBeGreaterThan(0);
    expect(connections.reduce((sum, c) => sum + c.answered, 0)).toBeGreaterThanOrEqual(CLIENTS * (BEFORE_STOP + AFTER_EXIT));
  });
});
