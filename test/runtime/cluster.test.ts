/**
 * Every core (src/runtime/node/cluster.ts): `npm start` with WEB_CONCURRENCY=2
 * runs two server processes on one port and one database file, each with its
 * own group commit. 200 concurrent orders for a stock of 50 → exactly 50
 * accepted; a write through either process purges the read cache of both
 * (anonymous reads after a rename all show it); SIGTERM stops both and the
 * primary exits 0; a bad WEB_CONCURRENCY is refused at start.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { alive, childrenOf } from "../support/processes";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serverBundle } from "../support/server-bundle";
import { call, REPO_ROOT, startServer, type ServerProcess } from "../support/server-process";
import { nodeSettings } from "../../src/config";

let dir: string;
let server: ServerProcess;
let staff: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "petstore-cluster-"));
  server = await startServer({ databaseUrl: `file:${join(dir, "cluster.db")}`, env: { WEB_CONCURRENCY: "2" } });
  staff = server.bootstrapKey!;
}, 120_000);

afterAll(async () => {
  if (!server.exited()) await server.kill();
  rmSync(dir, { recursive: true, force: true });
});

describe("WEB_CONCURRENCY=2", { timeout: 120_000 }, () => {
  it("runs two server processes under the primary; exactly one bootstrap key is printed", () => {
    expect(childrenOf(server.pid)).toHaveLength(2);
    // startServer waits for both: the first to listen is not the last (a scrape then missed the other, docs/testing.md#time).
    expect(server.output().match(/listening on/g)).toHaveLength(2);
    expect(staff).toMatch(/^psk_/);
    expect(server.output().match(/psk_[A-Za-z0-9_-]{43}/g)).toHaveLength(1);
  });

  it("200 concurrent orders for a stock of 50 → exactly 50 accepted, 150 refused, stock 0", async () => {
    const category = await call(server.url, "POST", "/categories", { name: "Cluster" }, { key: staff });
    const pet = await call(server.url, "POST", "/pets", { name: "Shared", categoryId: category.body.id }, { key: staff });
    expect((await call(server.url, "PUT", `/store/inventory/${pet.body.id}`, { quantity: 50 }, { key: staff })).status).toBe(200);
    const customers: string[] = [];
    for (let i = 0; i < 10; i++) {
      const account = await call(server.url, "POST", "/accounts", { name: `Customer ${i}`, email: `c${i}@example.com` });
      customers.push(account.body.apiKey.key);
    }
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        call(server.url, "POST", "/store/orders", { petId: pet.body.id, quantity: 1 }, { key: customers[i % customers.length] }),
      ),
    );
    expect(results.filter((r) => r.status !== 201 && r.status !== 409).map((r) => [r.status, r.body])).toEqual([]);
    const accepted = results.filter((r) => r.status === 201);
    expect(accepted).toHaveLength(50);
    expect(new Set(accepted.map((r) => r.body.id)).size).toBe(50);
    expect((await call(server.url, "GET", `/store/inventory/${pet.body.id}`, undefined, { key: staff })).body).toMatchObject({ quantity: 0 });
  });

  it("a write through one process purges the read cache of both", async () => {
    const category = await call(server.url, "POST", "/categories", { name: "Cached" }, { key: staff });
    const pet = await call(server.url, "POST", "/pets", { name: "Before", categoryId: category.body.id }, { key: staff });
    // One connection per read: the primary hands each new connection to the next free process (round-robin).
    const reads = async (n: number) => {
      const answers: { name: string; cache: string | null }[] = [];
      for (let i = 0; i < n; i++) {
        const res = await call(server.url, "GET", `/pets/${pet.body.id}`, undefined, { headers: { Connection: "close" } });
        answers.push({ name: res.body.name, cache: res.headers.get("x-cache") });
      }
      return answers;
    };
    // Read until both processes have stored the pet: each one's first read is its MISS.
    const before: { name: string; cache: string | null }[] = [];
    while (before.filter((r) => r.cache === "MISS").length < 2 && before.length < 40) before.push(...(await reads(1)));
    expect(before.filter((r) => r.cache === "MISS")).toHaveLength(2);
    expect(new Set(before.map((r) => r.name))).toEqual(new Set(["Before"]));
    expect((await call(server.url, "PATCH", `/pets/${pet.body.id}`, { name: "After" }, { key: staff })).status).toBe(200);
    // The purge reaches the other process as a message: it may trail the write's response by a moment.
    await expect.poll(async () => (await reads(10)).map((r) => r.name), { timeout: 2_000 }).toEqual(Array(10).fill("After"));
  });

  it("SIGTERM stops every process; the primary exits 0", async () => {
    const workers = childrenOf(server.pid);
    expect(workers).toHaveLength(2);
    expect(await server.stop()).toBe(0);
    expect(workers.filter(alive)).toEqual([]);
  });
});

describe("WEB_CONCURRENCY", () => {
  it("is 1 when unset, the cores for auto, a whole number ≥ 1 otherwise", () => {
    const processes = (value: string | undefined) => nodeSettings({ WEB_CONCURRENCY: value }).processes;
    expect([processes(undefined), processes(""), processes("auto"), processes("3")]).toEqual([1, 1, availableParallelism(), 3]);
    for (const bad of ["0", "-1", "1.5", "many"])
      expect(() => processes(bad)).toThrow(/^Invalid configuration: WEB_CONCURRENCY: must be a whole number ≥ 1 or "auto", not "/);
  });

  it("a bad value ends the start with one line and exit code 1", { timeout: 60_000 }, async () => {
    const run = promisify(execFile);
    const failed = await run(process.execPath, [serverBundle()], {
      cwd: REPO_ROOT,
      env: { ...process.env, DATABASE_URL: `file:${join(dir, "never.db")}`, PORT: "0", WEB_CONCURRENCY: "zero" },
    }).then(
      () => undefined,
      (error: { code: number; stderr: string }) => error,
    );
    expect(failed?.code).toBe(1);
    expect(failed?.stderr.trim()).toMatch(/^Invalid configuration: WEB_CONCURRENCY/);
  });
});
