/**
 * How operators get staff keys (docs/api.md#authentication, issue 3), run as real child
 * processes on a temp database file:
 * - `node --import tsx scripts/keys-create.ts --role staff --name ops` (what
 *   `npm run keys:create` runs, in one process) prints exactly one
 *   `psk_` key on stdout, and it works as a staff key against an app over the
 *   same database file;
 * - the Node server (`npm start`'s bundle of src/server.ts) on a fresh database prints a bootstrap
 *   staff key once, which works; restarted on the same database it prints none.
 * (Plain boot — /health, /pets — is test/runtime/boot.test.ts.)
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { parseConfig } from "../../src/config";
import { openTestDatabase } from "../support/database";
import { serverBundle } from "../support/server-bundle";
import { TEST_ENV } from "../support/node-target";

const ROOT = resolve(import.meta.dirname, "../..");
const KEY = /psk_[A-Za-z0-9_-]{43}/g;
const run = promisify(execFile);

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "petstore-keys-"));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** Run `scripts/keys-create.ts` with `args` against `dbFile`; resolves with its exit code and output. */
async function keysCreate(dbFile: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ["--import", "tsx", "scripts/keys-create.ts", ...args], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: `file:${dbFile}` },
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === "number" ? e.code : -1, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
}

/** Call an app over `dbFile` (in process) with `key`. */
async function withApp<T>(
  dbFile: string,
  use: (call: (method: string, path: string, key: string, body?: unknown) => Promise<Response>) => Promise<T>,
): Promise<T> {
  const db = await openTestDatabase(`file:${dbFile}`);
  try {
    const app = createApp({ db, config: parseConfig(TEST_ENV), log: () => {} });
    return await use(async (method, path, key, body) =>
      app.request(`http://localhost${path}`, {
        method,
        headers: { Authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    );
  } finally {
    await db.close();
  }
}

describe("npm run keys:create", () => {
  it("prints exactly one new staff key on stdout that works as a staff key over the same database", async () => {
    const dbFile = join(dir, "keys.db");
    const first = await keysCreate(dbFile, ["--role", "staff", "--name", "ops"]);
    expect(first.code, first.stderr).toBe(0);
    const lines = first.stdout.split("\n").filter((l) => l.trim() !== "");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^psk_[A-Za-z0-9_-]{43}$/);
    expect(first.stderr.match(KEY), "the secret goes to stdout only").toBeNull();
    const key = lines[0]!;

    const second = await keysCreate(dbFile, ["--role", "staff", "--name", "ops"]);
    expect(second.code, second.stderr).toBe(0);
    const another = second.stdout.trim();
    expect(another).toMatch(/^psk_[A-Za-z0-9_-]{43}$/);
    expect(another).not.toBe(key);

    await withApp(dbFile, async (call) => {
      const me = await call("GET", "/accounts/me", key);
      expect(me.status).toBe(200);
      const account = (await me.json()) as { id: number; role: string; name: string };
      expect(account).toMatchObject({ role: "staff", name: "ops" });
      const created = await call("POST", "/categories", key, { name: "Made with an operator key" });
      expect(created.status).toBe(201);
      // The second run added a key to the same operator account.
      const again = (await (await call("GET", "/accounts/me", another)).json()) as { id: number };
      expect(again.id).toBe(account.id);
      const keys = (await (await call("GET", "/accounts/me/keys", key)).json()) as unknown[];
      expect(keys).toHaveLength(2);
    });

    // Only hashes are in the file.
    const db = await openTestDatabase(`file:${dbFile}`);
    try {
      const rows = await db.execute("SELECT * FROM api_keys");
      expect(JSON.stringify(rows.rows)).not.toContain(key.slice(4));
      expect(JSON.stringify(rows.rows)).not.toContain(another.slice(4));
    } finally {
      await db.close();
    }
  });

  it("makes customer keys that staff routes refuse, and rejects an unknown role without printing a key", async () => {
    const dbFile = join(dir, "roles.db");
    const customer = await keysCreate(dbFile, ["--role", "customer", "--name", "tester"]);
    expect(customer.code, customer.stderr).toBe(0);
    const key = customer.stdout.trim();
    expect(key).toMatch(/^psk_[A-Za-z0-9_-]{43}$/);
    await withApp(dbFile, async (call) => {
      expect((await call("GET", "/accounts/me", key)).status).toBe(200);
      expect((await call("POST", "/categories", key, { name: "Nope" })).status).toBe(403);
    });

    const bogus = await keysCreate(dbFile, ["--role", "admin"]);
    expect(bogus.code).toBe(2);
    expect(bogus.stdout).toBe("");
    expect(bogus.stderr).toContain("--role");
  });

  it("--help prints the usage (exit 0); no arguments or an unknown option is a usage error (exit 2) that creates nothing", async () => {
    const dbFile = join(dir, "usage.db");
    // Six independent runs, started together (none of them writes).
    const helps = ["--help", "-h"].map((flag) => keysCreate(dbFile, [flag]));
    const usageErrors = (
      [
        [[], "--role is required"],
        [["--name", "ops"], "--role is required"],
        [["--role", "staff", "--verbose"], "Unknown option '--verbose'"],
        [["--role", "staff", "extra"], "extra"],
      ] as [string[], string][]
    ).map(([args, problem]) => ({ args, problem, run: keysCreate(dbFile, args) }));
    for (const help of await Promise.all(helps)) {
      expect(help.code, help.stderr).toBe(0);
      expect(help.stdout).toMatch(/^Usage: npm run keys:create -- --role <staff\|customer> \[--name <name>\]/);
      expect(help.stdout).not.toMatch(/psk_/);
    }
    for (const { args, problem, run } of usageErrors) {
      const res = await run;
      expect(res.code, JSON.stringify(args)).toBe(2);
      expect(res.stdout).toBe("");
      expect(res.stderr).toContain(problem);
      expect(res.stderr).toContain("Usage: npm run keys:create");
      expect(res.stderr).not.toMatch(/\n\s+at /); // no stack trace
    }
    // Nothing was created: the database holds no account (it may not even exist).
    const db = await openTestDatabase(`file:${dbFile}`);
    try {
      expect(Number((await db.execute("SELECT count(*) AS n FROM accounts")).rows[0]!.n)).toBe(0);
    } finally {
      await db.close();
    }
  });

  it("never hands out a key of a customer who signed up with the operator account's email", async () => {
    const dbFile = join(dir, "clash.db");
    const db = await openTestDatabase(`file:${dbFile}`);
    try {
      const app = createApp({ db, config: parseConfig(TEST_ENV), log: () => {} });
      const signUp = await app.request("http://localhost/accounts", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ name: "Squatter", email: "ops@staff.petstore.invalid" }),
      });
      expect(signUp.status).toBe(201);
    } finally {
      await db.close();
    }
    const staff = await keysCreate(dbFile, ["--role", "staff", "--name", "ops"]);
    expect(staff.code).toBe(1);
    expect(staff.stdout.match(KEY)).toBeNull();
    expect(staff.stderr).toContain("role customer");
  });
});

/** A TCP port that was free a moment ago. */
async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolvePort(typeof address === "object" && address ? address.port : 0));
    });
  });
}

interface RunningServer {
  child: ChildProcess;
  port: number;
  /** Everything printed so far. */
  output: () => { stdout: string; stderr: string };
}

const children = new Set<ChildProcess>();
afterEach(async () => {
  for (const child of children) await stop(child);
});

/** Start the server (`npm start`'s bundle) on `dbFile` and wait until it listens. */
async function startServer(dbFile: string): Promise<RunningServer> {
  const port = await freePort();
  const child = spawn(process.execPath, [serverBundle()], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: `file:${dbFile}`, HOST: "127.0.0.1", PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  await new Promise<void>((ready, fail) => {
    const timer = setTimeout(() => fail(new Error(`server did not start:\n${stdout}\n${stderr}`)), 45_000);
    const check = () => {
      if (/listening on/.test(stdout)) {
        clearTimeout(timer);
        ready();
      }
    };
    child.stdout!.on("data", check);
    child.once("exit", (code) => {
      clearTimeout(timer);
      fail(new Error(`server exited with ${code}:\n${stdout}\n${stderr}`));
    });
  });
  return { child, port, output: () => ({ stdout, stderr }) };
}

/** SIGTERM the child and wait for it to exit (SIGKILL after 10 s). */
async function stop(child: ChildProcess): Promise<void> {
  children.delete(child);
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((done) => {
    const killer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    child.once("exit", () => {
      clearTimeout(killer);
      done();
    });
    child.kill("SIGTERM");
  });
}

describe("npm start: the bootstrap staff key", () => {
  it("is printed once on a fresh database and works; a restart on the same database prints none", async () => {
    const dbFile = join(dir, "server.db");
    const first = await startServer(dbFile);
    const printed = first.output().stdout.match(KEY) ?? [];
    expect(printed, first.output().stdout).toHaveLength(1);
    const key = printed[0]!;
    expect(first.output().stderr.match(KEY)).toBeNull();

    const base = `http://127.0.0.1:${first.port}`;
    const me = await fetch(`${base}/accounts/me`, { headers: { Authorization: `Bearer ${key}` } });
    expect(me.status).toBe(200);
    expect(((await me.json()) as { role: string }).role).toBe("staff");
    const category = await fetch(`${base}/categories`, {
      method: "POST",
      headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
      body: JSON.stringify({ name: "Bootstrapped" }),
    });
    expect(category.status).toBe(201);
    await stop(first.child);
    expect(first.output().stdout.match(KEY), "the key is printed once, never logged again").toHaveLength(1);

    const second = await startServer(dbFile);
    const again = await fetch(`http://127.0.0.1:${second.port}/accounts/me`, { headers: { Authorization: `Bearer ${key}` } });
    expect(again.status, "the bootstrap key survives restarts").toBe(200);
    await again.arrayBuffer();
    await stop(second.child);
    const { stdout, stderr } = second.output();
    expect(stdout).toMatch(/listening on/);
    expect(`${stdout}\n${stderr}`.match(KEY), "no key on a database that already has staff").toBeNull();
  });
});
