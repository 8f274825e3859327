/**
 * A libSQL `Client` over an embedded database file, made safe for a server
 * that shares the file with other processes.
 *
 * - Lock waits never block the event loop. The embedded driver runs SQL
 *   synchronously on the calling thread, so SQLite's own busy handler
 *   (`busy_timeout`) would stall every request of the process while one write
 *   waits for another process's write lock. Here the driver fails at once
 *   (`SQLITE_BUSY`, busy timeout 0) and the operation is retried on a timer
 *   with capped exponential backoff until `lockWaitMs` has passed; then the
 *   `SQLITE_BUSY` error is thrown (the app answers 503 `database_unavailable`
 *   with `Retry-After`). An operation that failed with `SQLITE_BUSY` changed
 *   nothing (its transaction was rolled back), so retrying it is safe. The
 *   driver (libsql 0.5) leaves the statement that failed with SQLITE_BUSY
 *   active on its connection, after which every COMMIT on that connection
 *   fails ("SQL statements in progress"); so after SQLITE_BUSY the connection
 *   is replaced (`reconnect`) and the per-connection pragmas are set again.
 * - The file it opened must still be the file at its path. After every
 *   operation the path is `stat`ed (a few µs) and compared with the device and
 *   inode seen at open; when the file was deleted or replaced, the operation
 *   fails with `SQLITE_CANTOPEN` (503): a write that landed in a deleted file
 *   would be lost at the next start, so it must not be acknowledged.
 */
import { accessSync, constants, statSync } from "node:fs";
import { dirname } from "node:path";
import { LibsqlError, type Client, type InArgs, type InStatement, type Replicated, type ResultSet, type Transaction, type TransactionMode } from "@libsql/client";

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

export interface FileClientOptions {
  /** Path of the database file (`file:` URL without the scheme). */
  path: string;
  /** Longest time an operation waits for another process's lock, ms (then it throws SQLITE_BUSY). */
  lockWaitMs: number;
  /** Per-connection statements (pragmas) run again on every new connection. */
  connectionSetup: string[];
}

/**
 * Wrap `inner` (a `file:` client created with busy timeout 0). The file at
 * `path` must exist (the client has opened it).
 */
export class FileClient implements Client {
  readonly #inner: Client;
  readonly #path: string;
  readonly #lockWaitMs: number;
  readonly #opened: FileIdentity;
  readonly #setup: string[];

  constructor(inner: Client, options: FileClientOptions) {
    this.#inner = inner;
    this.#setup = options.connectionSetup;
    this.#path = options.path;
    this.#lockWaitMs = options.lockWaitMs;
    const opened = identityOf(options.path);
    if (!opened) throw new LibsqlError(`The database file ${options.path} does not exist.`, "SQLITE_CANTOPEN");
    this.#opened = opened;
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
    this.#assertSameFile();
    try {
      accessSync(this.#path, constants.W_OK);
      accessSync(dirname(this.#path), constants.W_OK);
    } catch (error) {
      throw new LibsqlError(`The database file ${this.#path} cannot be written: ${(error as Error).message}`, "SQLITE_READONLY");
    }
  }

  #assertSameFile(): void {
    const now = identityOf(this.#path);
    if (!now || now.dev !== this.#opened.dev || now.ino !== this.#opened.ino) {
      throw new LibsqlError(`The database file ${this.#path} was ${now ? "replaced" : "deleted"} while the server ran; restart it.`, "SQLITE_CANTOPEN");
    }
  }

  /** Run `operation`, retrying SQLITE_BUSY on a timer until the lock wait is spent; then check the file. */
  async #run<T>(operation: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + this.#lockWaitMs;
    for (let attempt = 0; ; attempt++) {
      try {
        const result = await operation();
        this.#assertSameFile();
        return result;
      } catch (error) {
        if (!isBusy(error)) throw error;
        await this.#replaceConnection();
        const remaining = deadline - Date.now();
        if (remaining <= 0) throw error;
        // 1, 2, 4 … 64 ms, ±50 % jitter so that waiting processes do not retry in step.
        const backoff = Math.min(64, 2 ** attempt) * (0.5 + Math.random());
        await sleep(Math.min(remaining, backoff));
      }
    }
  }

  /** A fresh connection with the per-connection settings (see the module comment). */
  async #replaceConnection(): Promise<void> {
    this.#inner.reconnect();
    for (const sql of this.#setup) await this.#inner.execute(sql);
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
