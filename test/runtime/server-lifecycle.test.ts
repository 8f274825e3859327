/**
 * The Node server process over a database file shared with other processes
 * (issue 14): a taken port, a clean stop, another process holding the write
 * lock, and the file deleted or replaced under the running server. Each test
 * runs the Node server (`npm start`'s bundle of src/server.ts) as a real child
 * process on its own temp database.
 */
import { spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, renameSync, rmSync, statSync, unlinkSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient, type Client } from "@libsql/client";
import { serverBundle } from "../support/server-bundle";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { call, REPO_ROOT, startServer, UNLIMITED_ENV, type ServerProcess } from "../support/server-process";

let dir: string;
let servers: ServerProcess[] = [];
let clients: Client[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "petstore-lifecycle-"));
});
afterEach(async () => {
  for (const client of clients) client.close();
  clients = [];
  for (const server of servers) if (!server.exited()) await server.kill();
  servers = [];
});
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function start(name: string, env: Record<string, string> = {}): Promise<{ server: ServerProcess; file: string; staff: string }> {
  const file = join(dir, `${name}.db`);
  const server = await startServer({ databaseUrl: `file:${file}`, env });
  servers.push(server);
  expect(server.bootstrapKey, server.output()).toMatch(/^psk_/);
  return { server, file, staff: server.bootstrapKey! };
}

/** Another process's connection to `file` (as `npm run seed` would have). */
function otherConnection(file: string): Client {
  const client = createClient({ url: `file:${file}` });
  clients.push(client);
  return client;
}

/** Settles with "pending" when `promise` has not settled yet (checked after the current I/O turn). */
async function stateOf(promise: Promise<unknown>): Promise<"pending" | "settled"> {
  let settled = false;
  void promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return settled ? "settled" : "pending";
}

describe("PORT already in use on a fresh database", () => {
  let blocker: Server;
  afterAll(() => blocker?.close());

  it("exits with one clear line and no stack trace, before the one-time staff key is made", async () => {
    blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    const port = (blocker.address() as { port: number }).port;
    const file = join(dir, "busy-port.db");
    const child = spawn(process.execPath, [serverBundle()], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...UNLIMITED_ENV, DATABASE_URL: `file:${file}`, HOST: "127.0.0.1", PORT: String(port) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));

    expect(code).toBe(1);
    expect(stdout, "no key, no listening line").toBe("");
    expect(stderr.trim().split("\n"), stderr).toEqual([`Port ${port} on 127.0.0.1 is already in use: stop the other server or set PORT.`]);
    // The key was not consumed: the next start on a free port prints it.
    const next = await startServer({ databaseUrl: `file:${file}` });
    servers.push(next);
    expect(next.bootstrapKey, next.output()).toMatch(/^psk_/);
  });
});

describe("several servers starting together on a fresh database", () => {
  it("all start (migrations run once) and exactly one prints the bootstrap staff key", async () => {
    const file = join(dir, "together.db");
    const started = await Promise.all(Array.from({ length: 3 }, () => startServer({ databaseUrl: `file:${file}` })));
    servers.push(...started);
    const keys = started.map((s) => s.bootstrapKey).filter((k) => k !== undefined);
    expect(keys, started.map((s) => s.output()).join("\n")).toHaveLength(1);
    const orders = await call(started[2]!.url, "GET", "/store/orders", undefined, { key: keys[0] });
    expect(orders.status).toBe(200);
  });
});

describe("a clean stop (SIGTERM)", () => {
  it("checkpoints the WAL into the database file: no -wal/-shm content is left behind, and the data is in the file", async () => {
    const { server, file, staff } = await start("clean-stop");
    const category = await call(server.url, "POST", "/categories", { name: "Checkpointed" }, { key: staff });
    expect(category.status).toBe(201);
    expect(await server.stop()).toBe(0);

    for (const suffix of ["-wal", "-shm"]) {
      const leftover = `${file}${suffix}`;
      expect(existsSync(leftover) ? statSync(leftover).size : 0, `${leftover} is empty or gone`).toBe(0);
    }
    // The file alone holds the write (read with no WAL present).
    const reader = otherConnection(file);
    const rows = await reader.execute({ sql: "SELECT name FROM categories WHERE id = ?", args: [category.body.id] });
    expect(rows.rows.map((r) => r.name)).toEqual(["Checkpointed"]);
  });
});

describe("another process holds the write lock", () => {
  it("reads and /health answer while a write waits for the lock, and the write completes once it is released", async () => {
    // No read cache: every read below reaches the database.
    const { server, file, staff } = await start("held-lock", { READ_CACHE_TTL_SECONDS: "0" });
    // Verifying a key writes its last use; once verified it is cached (KEY_CACHE_TTL_SECONDS), so the write below waits only for its own batch.
    expect((await call(server.url, "GET", "/store/orders", undefined, { key: staff })).status).toBe(200);
    const other = otherConnection(file);
    const held = await other.transaction("write"); // BEGIN IMMEDIATE: the write lock, as a long seed batch would hold it
    try {
      const write = call(server.url, "POST", "/categories", { name: "Waited" }, { key: staff });
      await new Promise((resolve) => setTimeout(resolve, 300)); // let the write reach the database and wait
      const health = await call(server.url, "GET", "/health");
      const pets = await call(server.url, "GET", "/pets?limit=1");
      const orders = await call(server.url, "GET", "/store/orders", undefined, { key: staff });
      expect(health.status).toBe(200);
      expect(pets.status).toBe(200);
      expect(pets.headers.get("x-cache")).toBeNull();
      expect(orders.status).toBe(200);
      expect(await stateOf(write), "the write still waits while the reads were answered").toBe("pending");
      await held.rollback();
      const done = await write;
      expect(done.status, JSON.stringify(done.body)).toBe(201);
    } finally {
      held.close();
    }
  });

  it("a write that cannot get the lock within DATABASE_LOCK_TIMEOUT_MS answers 503 database_unavailable with Retry-After", async () => {
    const { server, file, staff } = await start("lock-timeout", { DATABASE_LOCK_TIMEOUT_MS: "200" });
    expect((await call(server.url, "GET", "/store/orders", undefined, { key: staff })).status).toBe(200); // the key is cached
    const held = await otherConnection(file).transaction("write");
    try {
      const write = await call(server.url, "POST", "/categories", { name: "Refused" }, { key: staff });
      expect(write.status).toBe(503);
      expect(write.body).toMatchObject({ code: "database_unavailable", status: 503 });
      expect(write.headers.get("retry-after")).toBe("1");
      expect((await call(server.url, "GET", "/health")).status).toBe(200);
    } finally {
      await held.rollback();
      held.close();
    }
    expect((await call(server.url, "POST", "/categories", { name: "Refused" }, { key: staff })).status).toBe(201);
  });
});

describe("the database file is deleted or replaced under the running server", () => {
  it("deleted: /health answers 503 and a write is refused with 503, not acknowledged", async () => {
    const { server, file, staff } = await start("deleted");
    expect((await call(server.url, "GET", "/health")).status).toBe(200);
    for (const suffix of ["", "-wal", "-shm"]) if (existsSync(`${file}${suffix}`)) unlinkSync(`${file}${suffix}`);

    const health = await call(server.url, "GET", "/health");
    expect(health.status).toBe(503);
    expect(health.body).toMatchObject({ code: "database_unavailable", status: 503 });
    const write = await call(server.url, "POST", "/categories", { name: "Into the void" }, { key: staff });
    expect(write.status).toBe(503);
    expect(write.body).toMatchObject({ code: "database_unavailable" });
  });

  it("replaced (another file renamed over it): /health answers 503", async () => {
    const { server, file } = await start("replaced");
    const copy = join(dir, "replacement.db");
    copyFileSync(file, copy);
    renameSync(copy, file);
    const health = await call(server.url, "GET", "/health");
    expect(health.status).toBe(503);
    expect(health.body).toMatchObject({ code: "database_unavailable" });
  });
});

describe("HOST=0.0.0.0", () => {
  it("listens on every interface and says so", async () => {
    const server = await startServer({ databaseUrl: `file:${join(dir, "any-host.db")}`, host: "0.0.0.0" });
    servers.push(server);
    expect(server.output()).toMatch(/listening on http:\/\/0\.0\.0\.0:\d+/);
    expect((await call(server.url, "GET", "/health")).status).toBe(200);
  });
});

describe("TRUST_PROXY: the client address behind load balancers", () => {
  const get = (server: ServerProcess, forwardedFor: string) => call(server.url, "GET", "/health", undefined, { headers: { "X-Forwarded-For": forwardedFor } });
  const limits = { RATE_LIMIT_ANON_PER_MIN: "2" };

  it("TRUST_PROXY=1: the right-most X-Forwarded-For address (added by the proxy) is the client; what the client put left of it is ignored", async () => {
    const { server } = await start("trust-proxy", { ...limits, TRUST_PROXY: "1" });
    expect((await get(server, "198.51.100.1")).status).toBe(200);
    expect((await get(server, "203.0.113.7, 198.51.100.1")).status).toBe(200);
    const third = await get(server, "192.0.2.99, 198.51.100.1"); // a forged left part changes nothing
    expect(third.status).toBe(429);
    expect(third.body).toMatchObject({ code: "rate_limited" });
    expect((await get(server, "203.0.113.7, 198.51.100.2")).status, "another client behind the proxy has its own budget").toBe(200);
  });

  it("off by default: X-Forwarded-For is ignored and the socket address counts", async () => {
    // 3: the readiness check of startServer spent one from this socket address.
    const { server } = await start("no-proxy", { RATE_LIMIT_ANON_PER_MIN: "3" });
    expect((await get(server, "198.51.100.1")).status).toBe(200);
    expect((await get(server, "198.51.100.2")).status).toBe(200);
    expect((await get(server, "198.51.100.3")).status).toBe(429);
  });
});
