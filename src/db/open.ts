/**
 * The one way Node code (server, seed, keys:create, db:migrate, bench, tests)
 * opens the database named by the environment (docs/scaling.md):
 *
 * - `file:<path>`: an embedded libSQL file through `NativeFileClient`
 *   (src/db/native-client.ts: each SQL text compiled once). One connection
 *   (SQL runs synchronously, and the per-connection pragmas below must hold
 *   for every statement), journal WAL + synchronous=FULL (a batch resolves only
 *   after its commit is fsynced: acknowledged writes survive a crash or power
 *   loss), foreign_keys=ON. Lock waits and a deleted/replaced file are handled
 *   by `GuardedClient` (src/db/guarded-client.ts).
 * - `http(s)://`, `libsql://`, `ws(s)://`: a libSQL server (sqld, Turso) with
 *   `DATABASE_AUTH_TOKEN`; no pragmas (sqld refuses file pragmas such as
 *   busy_timeout), the client's own concurrency (20 requests in flight);
 *   SQLITE_BUSY from contending writers is waited out (`GuardedClient`).
 * - `file:<path>` + `DATABASE_SYNC_URL`: an embedded replica of that server
 *   (`createClient({ url, syncUrl, authToken })`): reads from the local file,
 *   writes go to the primary and a client reads its own writes (the driver's
 *   `readYourWrites`, on by default); other processes' writes arrive with the
 *   next sync, every `DATABASE_SYNC_INTERVAL_SECONDS`. No pragmas: the driver
 *   owns the replica file.
 *   (https://docs.turso.tech/features/embedded-replicas/introduction)
 *
 * Migrations run on open (on the primary for a replica), once even when
 * several processes start together (src/db/migrate.ts).
 *
 * Every kind group-commits its write batches (src/db/group-commit.ts): the
 * batches of concurrent requests share one transaction and one fsync.
 */
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { type Client, createClient } from "@libsql/client";
import { createDatabase, type Database } from "./client";
import { GroupCommitClient } from "./group-commit";
import { GuardedClient, waitOutBusy } from "./guarded-client";
import { NativeFileClient } from "./native-client";
import { applyMigrations } from "./migrate";
import { serverFetch } from "./remote";

/** Longest wait for one request to a libSQL server, answer included, ms (`DATABASE_REQUEST_TIMEOUT_MS`). */
export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;

/** Where the database is and how to reach it; read from the environment by `databaseSettings`. */
export interface DatabaseSettings {
  /** `file:<path>`, `:memory:`, `http(s)://…`, `libsql://…`. */
  url: string;
  /** Token of the libSQL server (of `syncUrl` for a replica). */
  authToken?: string;
  /** Primary of an embedded replica (`url` must then be `file:`). */
  syncUrl?: string;
  /** Replica: seconds between background syncs (default 5). */
  syncIntervalSeconds: number;
  /** File: longest wait for another process's write lock, ms, before SQLITE_BUSY (503). Default 5000. */
  lockWaitMs: number;
  /** libSQL server: longest wait for one request's answer, ms, before 503. Default 10000. */
  requestTimeoutMs: number;
}

/** What `openDatabase` returns. */
export interface OpenedDatabase {
  db: Database;
  kind: "file" | "server" | "replica";
  /** The URL to show in logs: no credentials, no query. */
  displayUrl: string;
  /** Migrations this open applied (0 when they were applied before, or by another process). */
  migrationsApplied: number;
  /**
   * Resolves when the database answers and can be written; rejects with a
   * libSQL error (503 `database_unavailable` in the app) otherwise. File: the
   * path still names the opened file and is writable, and `SELECT 1` answers.
   * Server and replica: `SELECT 1` answers.
   */
  check(): Promise<void>;
  /** Close; a file database first checkpoints its WAL into the file and, when it is the last user, removes `-wal`/`-shm`. */
  close(): Promise<void>;
}

/** Defaults of the variables (README "Configuration"). */
export const DEFAULT_DATABASE_URL = "file:.data/petstore.db";

const nonEmpty = (value: string | undefined) => (value === undefined || value === "" ? undefined : value);

function positive(name: string, value: string | undefined, fallback: number): number {
  if (nonEmpty(value) === undefined) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new Error(`Invalid configuration: ${name} must be a number ≥ 0, got ${JSON.stringify(value)}`);
  return n;
}

/**
 * Settings from the environment: DATABASE_URL (default `file:.data/petstore.db`),
 * DATABASE_AUTH_TOKEN, DATABASE_SYNC_URL, DATABASE_SYNC_INTERVAL_SECONDS (5),
 * DATABASE_LOCK_TIMEOUT_MS (5000).
 * @throws Error on a bad number or a sync URL with a non-`file:` DATABASE_URL.
 */
export function databaseSettings(env: Record<string, string | undefined>): DatabaseSettings {
  const settings: DatabaseSettings = {
    url: nonEmpty(env.DATABASE_URL) ?? DEFAULT_DATABASE_URL,
    authToken: nonEmpty(env.DATABASE_AUTH_TOKEN),
    syncUrl: nonEmpty(env.DATABASE_SYNC_URL),
    syncIntervalSeconds: positive("DATABASE_SYNC_INTERVAL_SECONDS", env.DATABASE_SYNC_INTERVAL_SECONDS, 5),
    lockWaitMs: positive("DATABASE_LOCK_TIMEOUT_MS", env.DATABASE_LOCK_TIMEOUT_MS, 5000),
    requestTimeoutMs: positive("DATABASE_REQUEST_TIMEOUT_MS", env.DATABASE_REQUEST_TIMEOUT_MS, DEFAULT_REQUEST_TIMEOUT_MS),
  };
  if (settings.syncUrl && !settings.url.startsWith("file:")) {
    throw new Error("Invalid configuration: DATABASE_SYNC_URL needs a file: DATABASE_URL (the local replica)");
  }
  return settings;
}

function displayUrl(url: string): string {
  if (url.startsWith("file:") || url === ":memory:") return url;
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname === "/" ? "" : u.pathname}`;
  } catch {
    return "(invalid URL)";
  }
}

/** Path of a `file:` URL (as the driver reads it: the rest of the URL, query dropped), or undefined for `:memory:`. */
function filePath(url: string): string | undefined {
  if (!url.startsWith("file:")) return undefined;
  const path = url.slice("file:".length).split("?")[0]!;
  return path && !path.startsWith(":") ? path : undefined;
}

/**
 * Open, configure and migrate the database of `settings`.
 * `options.migrate: false` skips the migrations (a caller that only reads).
 * @throws the driver's error when the database cannot be opened or migrated.
 */
export async function openDatabase(settings: DatabaseSettings, options: { migrate?: boolean } = {}): Promise<OpenedDatabase> {
  const { url, authToken, syncUrl } = settings;
  const migrate = options.migrate ?? true;
  const shown = syncUrl ? `${displayUrl(url)} (replica of ${displayUrl(syncUrl)})` : displayUrl(url);

  if (syncUrl) {
    const path = filePath(url);
    if (path) mkdirSync(dirname(path), { recursive: true });
    // Migrate on the primary, then bring the replica up to date.
    let migrationsApplied = 0;
    if (migrate) {
      const primary = createClient({ url: syncUrl, authToken });
      try {
        migrationsApplied = await applyMigrations({ $client: primary });
      } finally {
        primary.close();
      }
    }
    const replica = createClient({ url, syncUrl, authToken, syncInterval: settings.syncIntervalSeconds || undefined, readYourWrites: true });
    // Writes go to the primary, where contending writers may get SQLITE_BUSY.
    const client = new GroupCommitClient(new GuardedClient(replica, { lockWaitMs: settings.lockWaitMs }));
    await client.sync();
    const check = () => client.execute("SELECT 1").then(() => undefined);
    return { db: createDatabase(client), kind: "replica", displayUrl: shown, migrationsApplied, check, close: () => client.closeGracefully() };
  }

  if (!url.startsWith("file:") && url !== ":memory:") {
    // Contending writers get SQLITE_BUSY from the server: waited out like a file's lock.
    // A saturated server answers 429 before running anything: sent again after a backoff (src/db/remote.ts).
    const server = createClient({ url, authToken, fetch: serverFetch({ timeoutMs: settings.requestTimeoutMs }) });
    const client = new GroupCommitClient(new GuardedClient(server, { lockWaitMs: settings.lockWaitMs }));
    const db = createDatabase(client);
    const migrationsApplied = migrate ? await applyMigrations(db) : 0;
    const check = () => client.execute("SELECT 1").then(() => undefined);
    return { db, kind: "server", displayUrl: shown, migrationsApplied, check, close: () => client.closeGracefully() };
  }

  const path = filePath(url);
  if (path) mkdirSync(dirname(path), { recursive: true });
  const connectionSetup = ["PRAGMA synchronous = FULL", "PRAGMA foreign_keys = ON"];
  // Busy timeout 0: GuardedClient waits for locks on a timer instead of blocking the event loop.
  // Opening probes the file, which another process creating it may hold locked for a moment.
  // A file: statements compiled once per SQL text (src/db/native-client.ts); `:memory:`: the driver's own client.
  const inner: Client = await waitOutBusy(
    () => (path ? new NativeFileClient(path, { connectionSetup }) : createClient({ url, concurrency: 1 })),
    settings.lockWaitMs,
  );
  const guarded = path ? new GuardedClient(inner, { lockWaitMs: settings.lockWaitMs, file: { path, connectionSetup } }) : undefined;
  const client = new GroupCommitClient(guarded ?? inner);
  // WAL is a property of the file (set once, kept); the others hold per connection.
  if (path) await client.execute("PRAGMA journal_mode = WAL");
  for (const sql of connectionSetup) await client.execute(sql);
  const db = createDatabase(client);
  const migrationsApplied = migrate ? await applyMigrations(db) : 0;
  return {
    db,
    kind: "file",
    displayUrl: shown,
    migrationsApplied,
    check: async () => {
      guarded?.assertWritable();
      await client.execute("SELECT 1");
    },
    // Queued writes commit first; then the WAL is copied into the file, so that a stopped server leaves one file behind.
    close: () => client.closeGracefully(guarded && (() => guarded.closeCheckpointed())),
  };
}
