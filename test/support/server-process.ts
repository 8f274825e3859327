/**
 * The real Node server (src/server.ts) as a child process, for tests that need
 * a real socket, a real database file and real process death (concurrency,
 * crash recovery).
 *
 * The child is the esbuild bundle of src/server.ts exactly as `npm start` runs
 * it (`node dist/node/server.mjs`; the tests' copy is built once per run:
 * test/support/server-bundle.ts): one process, which a SIGKILL ends (the `tsx`
 * CLI would fork a second node process and relay only SIGINT/SIGTERM), and a
 * start that costs a quarter of the CPU of `node --import tsx src/server.ts`
 * (which test/runtime/boot.test.ts starts). The server listens on
 * `PORT=0` (the OS picks a free port, no race) and the port is read from its
 * "listening on http://HOST:PORT" line; readiness is then confirmed with
 * `GET /health`. The bootstrap staff key, printed once on a fresh database, is
 * captured from stdout.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { serverBundle } from "./server-bundle";

/** Repository root (test/support/ → ../..). */
export const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** Limits raised so that load tests are never rate limited (variables of docs/api.md#rate-limits). */
export const UNLIMITED_ENV: Record<string, string> = {
  RATE_LIMIT_ANON_PER_MIN: "1000000",
  RATE_LIMIT_KEY_PER_MIN: "1000000",
  RATE_LIMIT_SIGNUP_PER_HOUR: "1000000",
};

export interface ServerProcess {
  /** Base URL, e.g. `http://127.0.0.1:41234`. */
  url: string;
  pid: number;
  /** The bootstrap staff key if this start printed one (first start of a fresh database), else undefined. */
  bootstrapKey: string | undefined;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  /**
   * The first line of the output after character `from` that matches `pattern`, as soon as it is written.
   * @throws Error with the output after `from` when none is written within `timeoutMs` (default 10 000).
   */
  line(pattern: RegExp, from?: number, timeoutMs?: number): Promise<string>;
  /** Graceful stop (SIGTERM) and wait for the exit; resolves with the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL (no shutdown code runs) and wait for the exit. */
  kill(): Promise<void>;
  /** True once the process has exited. */
  exited(): boolean;
}

export interface StartOptions {
  /** DATABASE_URL: `file:<path>`, or a libSQL server's `http://…`. */
  databaseUrl: string;
  /** HOST (default 127.0.0.1); the returned URL is then reached on 127.0.0.1. */
  host?: string;
  /** Extra environment (defaults: UNLIMITED_ENV). */
  env?: Record<string, string>;
  /** How long to wait for readiness, ms (default 30 000). */
  timeoutMs?: number;
}

/** The server processes a start waits for: WEB_CONCURRENCY of `env` when a number (each prints its own "listening on" line), else 1. */
function processesOf(env: NodeJS.ProcessEnv): number {
  return Number.parseInt(env.WEB_CONCURRENCY ?? "", 10) || 1;
}

const KEY_PATTERN = /psk_[A-Za-z0-9_-]{43}/;
const LISTENING = /listening on (http:\/\/[^\s:]+:\d+)/;

/** Children still alive; killed if the test process exits without stopping them. */
const alive = new Set<ChildProcess>();
process.once("exit", () => {
  for (const child of alive) child.kill("SIGKILL");
});

function waitForExit(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}

/**
 * Start the server on 127.0.0.1 with an OS-assigned port and wait until
 * every server process listens (a cluster's each print their line) and
 * `/health` answers 200.
 * @throws Error with the captured output when it exits or is not ready in time.
 */
export async function startServer(options: StartOptions): Promise<ServerProcess> {
  const env = { ...process.env, ...UNLIMITED_ENV, ...(options.env ?? {}), DATABASE_URL: options.databaseUrl, HOST: options.host ?? "127.0.0.1", PORT: "0" };
  const child = spawn(process.execPath, [serverBundle()], { cwd: REPO_ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
  alive.add(child);
  child.once("exit", () => alive.delete(child));
  let output = "";
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));

  const timeoutMs = options.timeoutMs ?? 30_000;
  const deadline = Date.now() + timeoutMs;
  const processes = processesOf(env);
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`server not listening after ${timeoutMs} ms:\n${output}`));
    }, timeoutMs);
    const onData = () => {
      // A cluster's first process to listen is not the last: a scrape or a request meant for every process waits for all.
      const match = LISTENING.exec(output);
      if (!match || (output.match(new RegExp(LISTENING, "g"))?.length ?? 0) < processes) return;
      clearTimeout(timer);
      child.stdout!.off("data", onData);
      child.off("exit", onExit);
      resolve(match[1]!.replace("//0.0.0.0:", "//127.0.0.1:"));
    };
    const onExit = (code: number | null, signal: string | null) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${code ?? signal}) before listening:\n${output}`));
    };
    child.stdout!.on("data", onData);
    child.once("exit", onExit);
  });

  // What is left of the readiness budget (at least 1 s): a /health that never answers fails the start, naming it.
  const healthMs = Math.max(1_000, deadline - Date.now());
  const health = await fetch(`${url}/health`, { signal: AbortSignal.timeout(healthMs) }).catch((error: unknown) => {
    child.kill("SIGKILL");
    throw new Error(`GET ${url}/health: ${describeFailure(error, healthMs)}:\n${output}`, { cause: error });
  });
  if (health.status !== 200) {
    child.kill("SIGKILL");
    throw new Error(`GET /health → ${health.status}:\n${output}`);
  }
  await health.body?.cancel();

  return {
    url,
    pid: child.pid!,
    bootstrapKey: KEY_PATTERN.exec(output)?.[0],
    output: () => output,
    line: (pattern, from = 0, timeoutMs = 10_000) =>
      new Promise((resolve, reject) => {
        const find = () =>
          output
            .slice(from)
            .split("\n")
            .find((l) => pattern.test(l));
        const done = () => {
          clearTimeout(timer);
          child.stdout!.off("data", check);
          child.stderr!.off("data", check);
        };
        const check = () => {
          const found = find();
          if (found === undefined) return;
          done();
          resolve(found);
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`no output line matching ${pattern} within ${timeoutMs} ms:\n${output.slice(from)}`));
        }, timeoutMs);
        // Listeners added after the one that appends to `output`, so each chunk is checked once appended.
        child.stdout!.on("data", check);
        child.stderr!.on("data", check);
        check();
      }),
    exited: () => child.exitCode !== null || child.signalCode !== null,
    stop: async () => {
      child.kill("SIGTERM");
      return waitForExit(child);
    },
    kill: async () => {
      child.kill("SIGKILL");
      await waitForExit(child);
    },
  };
}

/** "no answer within N ms" for a fetch aborted by `AbortSignal.timeout`, else the error's message. */
function describeFailure(error: unknown, timeoutMs: number): string {
  if (error instanceof DOMException && error.name === "TimeoutError") return `no answer within ${timeoutMs} ms`;
  return error instanceof Error ? error.message : String(error);
}

/** How long `call` waits for a whole answer by default, ms: less than a test's timeout, so that a hang fails naming its request. */
export const CALL_TIMEOUT_MS = 20_000;

/**
 * JSON request helper for tests talking to a server process (no document validation: load tests).
 * @throws Error naming the method and URL when the request fails or no whole answer arrives within `options.timeoutMs` (default {@link CALL_TIMEOUT_MS}).
 */
export async function call<T = any>(
  url: string,
  method: string,
  path: string,
  body?: unknown,
  options: { key?: string; headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<{ status: number; headers: Headers; body: T }> {
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (options.key) headers.Authorization = `Bearer ${options.key}`;
  const timeoutMs = options.timeoutMs ?? CALL_TIMEOUT_MS;
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    const res = await fetch(`${url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: (text ? JSON.parse(text) : null) as T };
  } catch (error) {
    if (error instanceof SyntaxError) throw error;
    throw new Error(`${method} ${url}${path}: ${describeFailure(error, timeoutMs)}`, { cause: error });
  }
}
