/**
 * Boot test of the Node entry point (docs/api.md#runtimes): `src/server.ts` started as a
 * child process on a temp database file and a free port answers /health and
 * /pets, and exits cleanly (code 0) on SIGTERM.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** A TCP port that was free a moment ago (the OS picks it for listen(0)). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Resolves with the first stdout line matching `pattern`; rejects if the process exits first. */
function waitForLine(child: ChildProcess, pattern: RegExp, output: () => string): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffer = "";
    const onData = (chunk: Buffer) => {
      buffer += chunk.toString("utf8");
      const line = buffer.split("\n").find((l) => pattern.test(l));
      if (line) {
        child.stdout!.off("data", onData);
        child.off("exit", onExit);
        resolve(line);
      }
    };
    const onExit = (code: number | null, signal: string | null) => reject(new Error(`server exited (${code ?? signal}) before it was ready:\n${output()}`));
    child.stdout!.on("data", onData);
    child.once("exit", onExit);
  });
}

/** Resolves with the exit code and signal of `child`. */
function exited(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
}

describe("Node entry point (src/server.ts)", () => {
  let dir: string;
  let child: ChildProcess | undefined;
  let base: string;
  let output = "";

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "petstore-boot-"));
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    child = spawn(process.execPath, ["--import", "tsx", "src/server.ts"], {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: `file:${join(dir, "data", "boot.db")}`,
        HOST: "127.0.0.1",
        PORT: String(port),
        NODE_ENV: "test",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
    child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
    await waitForLine(child, /listening on http:\/\/127\.0\.0\.1:\d+/, () => output);
  });

  afterAll(async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill("SIGKILL");
      await exited(child);
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it("creates the database folder and file, migrated", () => {
    expect(existsSync(join(dir, "data", "boot.db"))).toBe(true);
  });

  it("answers /health", async () => {
    const res = await fetch(`${base}/health`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok" });
    expect(res.headers.get("x-request-id")).toBeTruthy();
  });

  it("answers /pets with the public cache policy", async () => {
    const res = await fetch(`${base}/pets`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual([]);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(res.headers.get("cache-control")).toMatch(/^public/);
  });

  it("answers unknown routes with the Error object", async () => {
    const res = await fetch(`${base}/nope`);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ code: "not_found", status: 404 });
  });

  it("serves /openapi.json with its own origin as base_url and the docs page", async () => {
    const document = await (await fetch(`${base}/openapi.json`)).json();
    expect(document.servers[0].variables.base_url.default).toBe(base);
    const docs = await fetch(`${base}/docs`);
    expect(docs.status).toBe(200);
    await docs.text();
  });

  it("exits cleanly on SIGTERM", async () => {
    const done = exited(child!);
    child!.kill("SIGTERM");
    const { code, signal } = await done;
    expect({ code, signal }, output).toEqual({ code: 0, signal: null });
    expect(output).toMatch(/SIGTERM/);
    await expect(fetch(`${base}/health`)).rejects.toThrow();
  });
});
