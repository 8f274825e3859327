/**
 * `npm start` stops gracefully when only npm's own process gets SIGTERM or
 * SIGINT (a supervisor that signals the pid it started, not the process
 * group): npm forwards the signal to its script, and every process of the
 * script passes it on down to the server, which finishes the request in
 * flight, closes the database (no `-wal`/`-shm` left) and frees the port.
 * Nothing else is signalled; the test waits for the server's own "closing"
 * line before it finishes the request, so no timing is assumed.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { alive, descendantsOf, killedAfterEach, portIsFree } from "../support/processes";
import { afterAll, describe, expect, it } from "vitest";
import { parseResponse, type RawResponse } from "../support/raw-http";
import { REPO_ROOT, UNLIMITED_ENV } from "../support/server-process";

const dir = mkdtempSync(join(tmpdir(), "petstore-npm-start-"));
const { started, tree } = killedAfterEach();
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * Resolves once `output()` matches `pattern` (checked on every chunk); rejects when the
 * process exits first or after `timeoutMs` (a deadline, so that a hang fails naming what it waited for).
 */
function waitForOutput(child: ChildProcess, output: () => string, pattern: RegExp, timeoutMs = 60_000): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      child.stdout!.off("data", check);
      child.off("close", onExit);
    };
    const check = () => {
      const match = pattern.exec(output());
      if (!match) return;
      done();
      resolve(match);
    };
    const onExit = (code: number | null, signal: string | null) => {
      done();
      reject(new Error(`npm start exited (${code ?? signal}) before ${pattern}:\n${output()}`));
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`no ${pattern} within ${timeoutMs} ms:\n${output()}`));
    }, timeoutMs);
    child.stdout!.on("data", check);
    // "close", not "exit": the pipes may still hold output of the processes that inherited them.
    child.once("close", onExit);
    check();
  });
}

/** True when `text` holds a whole answer with a `Content-Length` body. */
function wholeAnswer(text: string): boolean {
  const answer = parseResponse(text);
  const end = text.indexOf("\r\n\r\n");
  return answer !== undefined && Buffer.byteLength(text.slice(end + 4)) >= Number(answer.headers["content-length"] ?? 0);
}

/**
 * A sign-up whose body is sent in two halves, on a connection that first had a
 * whole request answered (so a server process, not a cluster's primary, holds
 * it); `finish()` sends the rest and reads the answer until the server closes.
 */
function halfSentSignUp(url: string): Promise<{ finish(): Promise<RawResponse> }> {
  const { hostname, port } = new URL(url);
  const body = Buffer.from(JSON.stringify({ name: "Drained", email: `drained-${crypto.randomUUID()}@example.com` }));
  const head = `POST /accounts HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`;
  const probe = `GET /health HTTP/1.1\r\nHost: ${hostname}:${port}\r\n\r\n`;
  return new Promise((resolve, reject) => {
    let chunks: Buffer[] = [];
    let probed = false;
    const socket: Socket = connect(Number(port), hostname, () => socket.write(probe));
    socket.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      if (probed || !wholeAnswer(Buffer.concat(chunks).toString("utf8"))) return;
      probed = true;
      chunks = [];
      socket.write(Buffer.concat([Buffer.from(head), body.subarray(0, 10)]), () =>
        resolve({
          finish: () =>
            new Promise((done, fail) => {
              socket.on("close", () => {
                const parsed = parseResponse(Buffer.concat(chunks).toString("utf8"));
                if (parsed) done(parsed);
                else fail(new Error(`no answer: ${Buffer.concat(chunks).toString("utf8")}`));
              });
              socket.write(body.subarray(10));
            }),
        }),
      );
    });
    socket.on("error", reject);
  });
}

describe("npm start, signalled through npm's own pid only", { timeout: 120_000 }, () => {
  it.each([
    ["SIGTERM", "1"],
    ["SIGINT", "1"],
    ["SIGTERM", "2"],
    ["SIGINT", "4"],
  ] as const)(
    "%s with WEB_CONCURRENCY=%s: the request in flight is answered, then every process exits, no -wal/-shm, the port is free",
    async (signal, processes) => {
      const file = join(dir, `${signal}-${processes}.db`);
      const npm = spawn("npm", ["start"], {
        cwd: REPO_ROOT,
        env: { ...process.env, ...UNLIMITED_ENV, DATABASE_URL: `file:${file}`, HOST: "127.0.0.1", PORT: "0", WEB_CONCURRENCY: processes },
        stdio: ["ignore", "pipe", "pipe"],
      });
      started.push(npm);
      let output = "";
      npm.stdout!.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
      npm.stderr!.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
      // "close": npm and every process that inherited its output pipes have exited.
      const exited = new Promise<void>((resolve) => npm.once("close", () => resolve()));

      // Each server process prints its own listening line.
      await waitForOutput(npm, () => output, new RegExp(`(?:listening on http[^]*){${processes}}`));
      const url = /listening on (http:\/\/[^\s:]+:\d+)/.exec(output)![1]!;
      const port = Number(new URL(url).port);
      tree.push(...descendantsOf(npm.pid!));
      expect(tree.length, "sh, the node wrapper and the server(s) under npm").toBeGreaterThanOrEqual(2);

      const inFlight = await halfSentSignUp(url);
      process.kill(npm.pid!, signal);
      // The signal reached the server (with workers: the primary, which stops them with SIGTERM). The worker
      // holding the request answers it whether or not it has begun to close by the time the rest arrives.
      await waitForOutput(npm, () => output, /^SIG(?:TERM|INT): closing/m);
      const answer = await inFlight.finish();
      expect(answer.status, JSON.stringify(answer.body)).toBe(201);

      await exited;
      for (const pid of tree) expect(alive(pid), `pid ${pid} of npm start's tree\n${output}`).toBe(false);
      expect(existsSync(`${file}-wal`), "no -wal left").toBe(false);
      expect(existsSync(`${file}-shm`), "no -shm left").toBe(false);
      expect(await portIsFree(port)).toBe(true);
    },
  );
});
