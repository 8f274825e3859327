/** How Node code opens the database of `DATABASE_URL`: migrated, write batches group-committed (docs/internals.md#opening-the-database). */
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { createClient } from "@libsql/client";
import type { Database } from "../client";
import { applyMigrations } from "../migrate";
import { ping } from "../plan";
import { sharedFile } from "./busy-wait";
import { groupCommit } from "./group-commit";
import { NativeFile } from "./native-file";
import { serverFetch, waitingOutBusy, waitOutBusy } from "./remote";

/** Where the database is and how to reach it (the DATABASE_* variables, read by `nodeSettings` of src/config.ts). */
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
  /** The database port; its write batches are group-committed. */
  db: Database;
  /** The URL to show in logs: no credentials, no query. */
  displayUrl: string;
  /** Migrations this open applied (0 when they were applied before, or by another process). */
  migrationsApplied: number;
  /** Resolves when `SELECT 1` answers and, for a file, its path still names the opened, writable file; else rejects with a libSQL error (503). */
  check(): Promise<void>;
  /** Close; a file database first checkpoints its WAL into the file and, when it is the last user, removes `-wal`/`-shm`. */
  close(): Promise<void>;
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

/** Open, configure and migrate the database of `settings`. @throws the driver's error when it cannot be opened or migrated. */
export async function openDatabase(settings: DatabaseSettings): Promise<OpenedDatabase> {
  const { url, authToken, syncUrl, lockWaitMs } = settings;
  const shown = syncUrl ? `${displayUrl(url)} (replica of ${displayUrl(syncUrl)})` : displayUrl(url);
  const path = filePath(url);
  if (path) mkdirSync(dirname(path), { recursive: true });

  if (syncUrl) {
    const primary = createClient({ url: syncUrl, authToken });
    const migrationsApplied = await applyMigrations(waitingOutBusy(primary, lockWaitMs)).finally(() => primary.close());
    const replica = createClient({ url, syncUrl, authToken, syncInterval: settings.syncIntervalSeconds || undefined, readYourWrites: true });
    await replica.sync();
    return opened(waitingOutBusy(replica, lockWaitMs), shown, migrationsApplied, replica);
  }

  if (!url.startsWith("file:") && url !== ":memory:") {
    const server = createClient({ url, authToken, fetch: serverFetch({ timeoutMs: settings.requestTimeoutMs }) });
    const waiting = waitingOutBusy(server, lockWaitMs);
    const migrationsApplied = await applyMigrations(waiting).catch((error: unknown) => {
      server.close();
      throw error;
    });
    return opened(waiting, shown, migrationsApplied, server);
  }

  if (!path) {
    // `:memory:`: the driver's own client, which the migrations must share.
    const memory = createClient({ url, concurrency: 1 });
    await memory.execute("PRAGMA foreign_keys = ON");
    const migrationsApplied = await applyMigrations(memory);
    return opened(memory, shown, migrationsApplied, memory);
  }

  // Opening probes the file, which another process creating it may hold locked for a moment.
  const connectionSetup = ["PRAGMA synchronous = FULL", "PRAGMA foreign_keys = ON"];
  const native = await waitOutBusy(() => new NativeFile(path, { connectionSetup }), lockWaitMs);
  const file = sharedFile(native, path, lockWaitMs);
  // WAL is a property of the file (set once, kept); the others hold per connection.
  const migrationsApplied = await file
    .execute("PRAGMA journal_mode = WAL")
    .then(() => applyMigrations(file))
    .catch((error: unknown) => {
      native.close();
      throw error;
    });
  return opened(file, shown, migrationsApplied, { close: () => file.closeCheckpointed(), assertWritable: () => file.assertWritable() });
}

/** What `openDatabase` returns for `inner`, group-committed: `check` asks `driver.assertWritable` first; `close` lets queued writes commit, then closes `driver`. */
function opened(inner: Database, shown: string, migrationsApplied: number, driver: { close(): unknown; assertWritable?(): void }): OpenedDatabase {
  const db = groupCommit(inner);
  let closing: Promise<void> | undefined;
  return {
    db,
    displayUrl: shown,
    migrationsApplied,
    check: async () => {
      driver.assertWritable?.();
      await ping(db);
    },
    // Once: a second call waits for the first.
    close: () =>
      (closing ??= (async () => {
        await db.drain();
        await driver.close();
      })()),
  };
}
