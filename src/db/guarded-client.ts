/**
 * A libSQL `Client` for a database shared with other processes (a file, or a
 * libSQL server several servers write to). It waits out SQLITE_BUSY on a timer
 * (capped exponential backoff, up to `lockWaitMs`), never in SQLite's busy
 * handler, so the event loop is never blocked; after SQLITE_BUSY on a file it
 * replaces the connection. For a file, it fails an operation with
 * SQLITE_CANTOPEN once the path no longer names the file it opened.
 * Why: docs/architecture.md, "Sharing the database".
 */
import { accessSync, constants, statSync } from "node:fs";
import { dirname } from "node:path";
import {
  LibsqlError,
  type Client,
  type InArgs,
  type InStatement,
  type Replicated,
  type ResultSet,
  type Transaction,
  type TransactionMode,
} from "@libsql/client";

/** Device and inode of a file: what identifies it while a path may be re-pointed. */
interface FileIdentity {
  dev: number;
  ino: number;
}

function identityOf(path: string): FileIdentity | undefined {
  const stats = statSync(path, { throwIfNoEntry: false });
  return stats ? { dev: stats.dev, ino: stats.ino } : undefined;
}

function isBusy(error: unknown): boolean {
  const code = String((error as { code?: unknown } | null)?.code ?? "");
  return code === "SQLITE_BUSY" || code.startsWith("SQLITE_BUSY_") || code === "SQLITE_LOCKED";
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Run `attempt` until it does not fail with SQLITE_BUSY/SQLITE_LOCKED, waiting
 * 1, 2, 4 … 64 ms (±50 % jitter, so that waiting processes do not retry in
 * step) between attempts, for at most `lockWaitMs` in all; then rethrow.
 */
export async function waitOutBusy<T>(attempt: () => T | Promise<T>, lockWaitMs: number): Promise<T> {
  const deadline = Date.now() + lockWaitMs;
  for (let n = 0; ; n++) {
    try {
      return await attempt();
    } catch (error) {
      const remaining = deadline - Date.now();
      if (!isBusy(error) || remaining <= 0) throw error;
      await sleep(Math.min(remaining, Math.min(64, 2 ** n) * (0.5 + Math.random())));
    }
  }
}

export interface GuardedClientOptions {
  /** Longest time an operation waits for another process's lock, ms (then it throws SQLITE_BUSY). */
  lockWaitMs: number;
  /** For an embedded file: its path (`file:` URL without the scheme) and the per-connection statements (pragmas) run on every new connection. */
  file?: { path: string; connectionSetup: string[] };
}

/**
 * Wrap `inner` (for a file: a client created with busy timeout 0, whose file
 * at `options.file.path` exists).
 * @throws LibsqlError SQLITE_CANTOPEN when the file does not exist.
 */
export class GuardedClient implements Client {
  readonly #inner: Client;
  readonly #lockWaitMs: number;
  readonly #file: { path: string; opened: FileIdentity; setup: string[] } | undefined;
  /** The connection saw SQLITE_BUSY: replace it before the next operation. */
  #stale = false;

  constructor(inner: Client, options: GuardedClientOptions) {
    this.#inner = inner;
    this.#lockWaitMs = options.lockWaitMs;
    if (options.file) {
      const opened = identityOf(options.file.path);
      if (!opened) throw new LibsqlError(`The database file ${options.file.path} does not exist.`, "SQLITE_CANTOPEN");
      this.#file = { path: options.file.path, opened, setup: options.file.connectionSetup };
    }
  }

  get closed(): boolean {
    return this.#inner.closed;
  }

  get protocol(): string {
    return this.#inner.protocol;
  }

  /**
   * Throws `SQLITE_CANTOPEN` when the path no longer names the opened file
   * (deleted or replaced) and `SQLITE_READONLY` when the file or its folder
   * (where the WAL and its index live) cannot be written.
   */
  assertWritable(): void {
    if (!this.#file) return;
    this.#assertSameFile();
    const { path } = this.#file;
    try {
      accessSync(path, constants.W_OK);
      accessSync(dirname(path), constants.W_OK);
    } catch (error) {
      throw new LibsqlError(`The database file ${path} cannot be written: ${(error as Error).message}`, "SQLITE_READONLY");
    }
  }

  #assertSameFile(): void {
    if (!this.#file) return;
    const { path, opened } = this.#file;
    const now = identityOf(path);
    if (!now || now.dev !== opened.dev || now.ino !== opened.ino) {
      throw new LibsqlError(`The database file ${path} was ${now ? "replaced" : "deleted"} while the server ran; restart it.`, "SQLITE_CANTOPEN");
    }
  }

  /** Run `operation` (on a fresh connection after SQLITE_BUSY), waiting out SQLITE_BUSY; then check the file. */
  #run<T>(operation: () => Promise<T>): Promise<T> {
    return waitOutBusy(async () => {
      try {
        if (this.#stale) await this.#replaceConnection();
        const result = await operation();
        this.#assertSameFile();
        return result;
      } catch (error) {
        if (isBusy(error) && this.#file) this.#stale = true;
        throw error;
      }
    }, this.#lockWaitMs);
  }

  /**
   * File: a fresh connection with its per-connection settings. libsql 0.5 leaves
   * a statement that failed with SQLITE_BUSY active, and then every COMMIT fails.
   */
  async #replaceConnection(): Promise<void> {
    if (!this.#file) return;
    this.#inner.reconnect();
    for (const sql of this.#file.setup) await this.#inner.execute(sql);
    this.#stale = false;
  }

  execute(stmtOrSql: InStatement | string, args?: InArgs): Promise<ResultSet> {
    return this.#run(() => (typeof stmtOrSql === "string" ? this.#inner.execute(stmtOrSql, args) : this.#inner.execute(stmtOrSql)));
  }

  batch(stmts: Array<InStatement | [string, InArgs?]>, mode?: TransactionMode): Promise<ResultSet[]> {
    return this.#run(() => this.#inner.batch(stmts, mode));
  }

  migrate(stmts: InStatement[]): Promise<ResultSet[]> {
    return this.#run(() => this.#inner.migrate(stmts));
  }

  /** Begins the transaction (waiting for the lock as above); its statements then run on the driver's transaction. */
  transaction(mode?: TransactionMode): Promise<Transaction> {
    return this.#run(() => this.#inner.transaction(mode));
  }

  executeMultiple(sql: string): Promise<void> {
    return this.#run(() => this.#inner.executeMultiple(sql));
  }

  sync(): Promise<Replicated> {
    return this.#inner.sync();
  }

  reconnect(): void {
    this.#inner.reconnect();
  }

  close(): void {
    this.#inner.close();
  }

  /**
   * Close after moving the WAL into the database file: `wal_checkpoint(TRUNCATE)`,
   * then, when no other connection has the file open, `journal_mode = DELETE`,
   * which removes `-wal` and `-shm` (the driver's close leaves them otherwise;
   * the next open sets WAL again). With other processes on the file, SQLITE_BUSY
   * leaves WAL mode on and the last one to close cleans up. One attempt each,
   * no lock wait; skipped when the file was deleted or replaced.
   */
  async closeCheckpointed(): Promise<void> {
    if (!this.#file) return this.#inner.close();
    try {
      this.#assertSameFile();
      await this.#inner.execute("PRAGMA wal_checkpoint(TRUNCATE)");
      await this.#inner.execute("PRAGMA journal_mode = DELETE");
    } catch (error) {
      if (!isBusy(error) && !String((error as { code?: unknown }).code).startsWith("SQLITE_CANTOPEN")) throw error;
    } finally {
      this.#inner.close();
    }
  }
}
