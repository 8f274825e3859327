/**
 * A libSQL `Client` for an embedded `file:` database that compiles each SQL
 * text once: statements are prepared with libsql-js (`libsql`, the engine
 * under `@libsql/client`) and kept in a bounded LRU by SQL text, instead of
 * being compiled on every call. One connection; SQL runs synchronously.
 *
 * Same contract as `@libsql/client`'s file client, which GroupCommitClient
 * and GuardedClient wrap: `batch` in one transaction (BEGIN IMMEDIATE for
 * "write", BEGIN TRANSACTION READONLY for "read"), a failing statement
 * rejects with `LibsqlBatchError` (its `statementIndex`) and rolls back;
 * errors are `LibsqlError`s with SQLite's code names; result sets carry
 * `columns`, `columnTypes`, `rows` (each row indexable by position and by
 * column name, names enumerable), `rowsAffected` and `lastInsertRowid`;
 * integers are numbers (RangeError beyond ±2^53), blobs ArrayBuffers.
 * `reconnect()` opens a new connection and drops the compiled statements.
 */
import { Buffer } from "node:buffer";
import {
  LibsqlBatchError,
  LibsqlError,
  type Client,
  type InArgs,
  type InStatement,
  type InValue,
  type Replicated,
  type ResultSet,
  type Row,
  type Transaction,
  type TransactionMode,
  type Value,
} from "@libsql/client";
import Database from "libsql";
import { LRUCache } from "lru-cache";

type Statement = InStatement | [string, InArgs?];
type Native = InstanceType<typeof Database>;
type NativeStatement = ReturnType<Native["prepare"]>;

/** A compiled statement with what is known of it once compiled. */
interface Compiled {
  statement: NativeStatement;
  reader: boolean;
  columns: string[];
  columnTypes: string[];
  /** Each column name once, with its first position: a row's named values. */
  named: [string, number][];
  /** Prototype of its rows: positions read the row's values; `length` is the column count. */
  rowPrototype: object;
}

export interface NativeFileClientOptions {
  /** Most compiled statements kept (default 500); the least recently used are dropped. */
  maxStatements?: number;
  /** Statements run on every new connection, e.g. `PRAGMA synchronous = FULL` (per-connection pragmas). */
  connectionSetup?: readonly string[];
}

const VALUES = Symbol("values");

/** SQLite primary result codes by number (https://sqlite.org/rescode.html). */
const BASE_CODES = [
  "SQLITE_OK",
  "SQLITE_ERROR",
  "SQLITE_INTERNAL",
  "SQLITE_PERM",
  "SQLITE_ABORT",
  "SQLITE_BUSY",
  "SQLITE_LOCKED",
  "SQLITE_NOMEM",
  "SQLITE_READONLY",
  "SQLITE_INTERRUPT",
  "SQLITE_IOERR",
  "SQLITE_CORRUPT",
  "SQLITE_NOTFOUND",
  "SQLITE_FULL",
  "SQLITE_CANTOPEN",
  "SQLITE_PROTOCOL",
  "SQLITE_EMPTY",
  "SQLITE_SCHEMA",
  "SQLITE_TOOBIG",
  "SQLITE_CONSTRAINT",
  "SQLITE_MISMATCH",
  "SQLITE_MISUSE",
  "SQLITE_NOLFS",
  "SQLITE_AUTH",
  "SQLITE_FORMAT",
  "SQLITE_RANGE",
  "SQLITE_NOTADB",
  "SQLITE_NOTICE",
  "SQLITE_WARNING",
];

/** libsql-js's SqliteError as a LibsqlError (code: the primary code's name; extendedCode: libsql's). Other errors unchanged. */
function libsqlError(error: unknown): unknown {
  if (!(error instanceof Database.SqliteError)) return error;
  const raw = (error as { rawCode?: number }).rawCode;
  const base = raw === undefined ? "SQLITE_UNKNOWN" : (BASE_CODES[raw & 0xff] ?? `SQLITE_UNKNOWN_${raw & 0xff}`);
  return new LibsqlError(error.message, base, (error as { code?: string }).code, raw, error);
}

const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const MIN_INT64 = -(2n ** 63n);
const MAX_INT64 = 2n ** 63n - 1n;

/** An argument as SQLite takes it. @throws RangeError (non-finite number, bigint beyond 64 bits), TypeError (undefined). */
function toSql(value: InValue): unknown {
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new RangeError("Only finite numbers (not Infinity or NaN) can be passed as arguments");
    return value;
  }
  if (typeof value === "bigint") {
    if (value < MIN_INT64 || value > MAX_INT64) throw new RangeError("bigint is too large to be represented as a 64-bit integer and passed as argument");
    return value;
  }
  if (typeof value === "boolean") return value ? 1 : 0;
  if (value instanceof ArrayBuffer) return Buffer.from(value);
  if (value instanceof Date) return value.valueOf();
  if (value === undefined) throw new TypeError("undefined cannot be passed as argument to the database");
  return value;
}

/** A column value as the app reads it (integers as numbers, blobs as ArrayBuffers). @throws RangeError for an integer beyond ±2^53. */
function fromSql(value: unknown): Value {
  if (typeof value === "bigint") {
    if (value < MIN_SAFE || value > MAX_SAFE) throw new RangeError("Received integer which cannot be safely represented as a JavaScript number");
    return Number(value);
  }
  if (value instanceof Uint8Array) return value.buffer.slice(value.byteOffset, value.byteOffset + value.byteLength) as ArrayBuffer;
  return value as Value;
}

function bindArgs(args: InArgs | undefined): unknown[] | Record<string, unknown> {
  if (args === undefined) return [];
  if (Array.isArray(args)) return args.map(toSql);
  const named: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(args)) named[name[0] === "@" || name[0] === "$" || name[0] === ":" ? name.slice(1) : name] = toSql(value);
  return named;
}

/** The prototype of rows with `columns`: index `i` reads the i-th value; `length` is the column count. */
function rowPrototypeFor(columns: string[]): object {
  const prototype = {};
  for (let i = 0; i < columns.length; i++) {
    Object.defineProperty(prototype, i, {
      get(this: { [VALUES]: Value[] }) {
        return this[VALUES][i];
      },
    });
  }
  Object.defineProperty(prototype, "length", { value: columns.length });
  return prototype;
}

/** A result set shaped like `@libsql/client`'s (`toJSON` included). */
function resultSet(columns: string[], columnTypes: string[], rows: Row[], rowsAffected: number, lastInsertRowid: bigint | undefined): ResultSet {
  return {
    columns,
    columnTypes,
    rows,
    rowsAffected,
    lastInsertRowid,
    toJSON: () => ({
      columns,
      columnTypes,
      rows: rows.map((row) =>
        Array.prototype.map.call(row, (v: Value) => (typeof v === "bigint" ? `${v}` : v instanceof ArrayBuffer ? Buffer.from(v).toString("base64") : v)),
      ),
      rowsAffected,
      lastInsertRowid: lastInsertRowid === undefined ? null : `${lastInsertRowid}`,
    }),
  };
}

const BEGIN: Record<TransactionMode, string> = { write: "BEGIN IMMEDIATE", read: "BEGIN TRANSACTION READONLY", deferred: "BEGIN DEFERRED" };

/** The connection and its compiled statements. */
class Connection {
  readonly native: Native;
  readonly #statements: LRUCache<string, Compiled>;

  /** Open `path`, check that it answers and run `setup`. @throws LibsqlError. */
  constructor(path: string, options: Required<NativeFileClientOptions>) {
    try {
      // Busy timeout 0: lock waits are the caller's (GuardedClient), never a blocked event loop.
      this.native = new Database(path, { timeout: 0 });
    } catch (error) {
      throw libsqlError(error);
    }
    this.#statements = new LRUCache({ max: options.maxStatements });
    try {
      this.execute("SELECT 1");
      for (const sql of options.connectionSetup) this.execute(sql);
    } catch (error) {
      this.close();
      throw error;
    }
  }

  #compiled(sql: string): Compiled {
    let compiled = this.#statements.get(sql);
    if (compiled) return compiled;
    const statement = this.native.prepare(sql);
    statement.safeIntegers(true);
    const reader = statement.reader;
    if (reader) statement.raw(true);
    const described = reader ? statement.columns() : [];
    const columns = described.map((c) => c.name);
    const named = [...new Map(columns.map((name, i) => [name, i] as const).reverse())].reverse();
    compiled = { statement, reader, columns, columnTypes: described.map((c) => c.type ?? ""), named, rowPrototype: rowPrototypeFor(columns) };
    this.#statements.set(sql, compiled);
    return compiled;
  }

  /** Run one statement. @throws LibsqlError, RangeError, TypeError. */
  execute(stmt: Statement | string): ResultSet {
    const { sql, args } = typeof stmt === "string" ? { sql: stmt, args: undefined } : Array.isArray(stmt) ? { sql: stmt[0], args: stmt[1] } : stmt;
    try {
      const compiled = this.#compiled(sql);
      const bound = bindArgs(args);
      if (!compiled.reader) {
        const info = compiled.statement.run(bound);
        return resultSet([], [], [], info.changes, BigInt(info.lastInsertRowid));
      }
      const { named, rowPrototype } = compiled;
      const rows = (compiled.statement.all(bound) as unknown[][]).map((raw) => {
        const values = raw.map(fromSql);
        // Symbol-keyed and not enumerable: not among the row's keys, its JSON, its spread or Drizzle's normalized row.
        const row = Object.create(rowPrototype) as Record<string | symbol, unknown>;
        Object.defineProperty(row, VALUES, { value: values });
        for (const [name, i] of named) row[name] = values[i];
        return row as unknown as Row;
      });
      return resultSet(compiled.columns, compiled.columnTypes, rows, 0, undefined);
    } catch (error) {
      throw libsqlError(error);
    }
  }

  /** Run `stmts` in order; a failure is a LibsqlBatchError naming the statement. */
  executeAll(stmts: readonly (Statement | string)[]): ResultSet[] {
    return stmts.map((stmt, index) => {
      if (!this.native.inTransaction) throw new LibsqlBatchError("The transaction has been rolled back", index, "TRANSACTION_CLOSED");
      try {
        return this.execute(stmt);
      } catch (error) {
        if (error instanceof LibsqlError && !(error instanceof LibsqlBatchError)) {
          throw new LibsqlBatchError(
            error.message,
            index,
            error.code,
            error.extendedCode,
            error.rawCode,
            error.cause instanceof Error ? error.cause : undefined,
          );
        }
        throw error;
      }
    });
  }

  /** Roll back a transaction left open; false when that failed (the connection must then be replaced). */
  rollbackIfOpen(): boolean {
    try {
      if (this.native.open && this.native.inTransaction) this.execute("ROLLBACK");
      return true;
    } catch {
      return false;
    }
  }

  close(): void {
    this.#statements.clear();
    if (this.native.open) this.native.close();
  }
}

/** See the module comment. */
export class NativeFileClient implements Client {
  readonly #path: string;
  readonly #options: Required<NativeFileClientOptions>;
  #connection: Connection;
  /** The open interactive transaction, which holds the one connection. */
  #transaction: NativeTransaction | undefined;
  closed = false;
  readonly protocol = "file";

  /**
   * Open the database file at `path` (created when missing), check that it
   * answers and run `options.connectionSetup` on it.
   * @throws LibsqlError (e.g. SQLITE_CANTOPEN, SQLITE_BUSY while another process creates it).
   */
  constructor(path: string, options: NativeFileClientOptions = {}) {
    this.#path = path;
    this.#options = { maxStatements: options.maxStatements ?? 500, connectionSetup: options.connectionSetup ?? [] };
    this.#connection = new Connection(path, this.#options);
  }

  /** The connection, when no transaction holds it. @throws LibsqlError CLIENT_CLOSED, TRANSACTION_ACTIVE. */
  #free(): Connection {
    if (this.closed) throw new LibsqlError("The client is closed", "CLIENT_CLOSED");
    if (this.#transaction && !this.#transaction.closed) {
      throw new LibsqlError(
        "This client has a single connection, which an open transaction is holding. Commit or roll back the transaction before using the client again.",
        "TRANSACTION_ACTIVE",
      );
    }
    return this.#connection;
  }

  async execute(stmtOrSql: InStatement | string, args?: InArgs): Promise<ResultSet> {
    return this.#free().execute(typeof stmtOrSql === "string" ? { sql: stmtOrSql, args: args ?? [] } : stmtOrSql);
  }

  async batch(stmts: Statement[], mode: TransactionMode = "deferred"): Promise<ResultSet[]> {
    const connection = this.#free();
    try {
      connection.execute(BEGIN[mode]);
      const results = connection.executeAll(stmts);
      connection.execute("COMMIT");
      return results;
    } finally {
      this.#settle(connection);
    }
  }

  async migrate(stmts: InStatement[]): Promise<ResultSet[]> {
    const connection = this.#free();
    connection.execute("PRAGMA foreign_keys=off");
    try {
      connection.execute(BEGIN.deferred);
      const results = connection.executeAll(stmts);
      connection.execute("COMMIT");
      return results;
    } finally {
      this.#settle(connection);
      if (connection === this.#connection) connection.execute("PRAGMA foreign_keys=on");
    }
  }

  async transaction(mode: TransactionMode = "write"): Promise<Transaction> {
    const connection = this.#free();
    connection.execute(BEGIN[mode]);
    this.#transaction = new NativeTransaction(connection);
    return this.#transaction;
  }

  async executeMultiple(sql: string): Promise<void> {
    const connection = this.#free();
    try {
      connection.native.exec(sql);
    } catch (error) {
      throw libsqlError(error);
    } finally {
      this.#settle(connection);
    }
  }

  /** After an operation: roll back what it left open; a connection that cannot roll back is replaced. */
  #settle(connection: Connection): void {
    if (!connection.rollbackIfOpen() && connection === this.#connection && !this.closed) this.reconnect();
  }

  async sync(): Promise<Replicated> {
    throw new LibsqlError("A plain database file has no primary to sync with.", "SYNC_NOT_SUPPORTED");
  }

  /** A new connection (the compiled statements of the old one are dropped); an open transaction is abandoned. */
  reconnect(): void {
    this.#transaction?.abandon();
    this.#transaction = undefined;
    this.#connection.close();
    this.#connection = new Connection(this.#path, this.#options);
    this.closed = false;
  }

  close(): void {
    this.closed = true;
    this.#transaction?.abandon();
    this.#connection.close();
  }
}

/** An interactive transaction on the client's one connection (BEGIN already run). */
class NativeTransaction implements Transaction {
  #connection: Connection | undefined;

  constructor(connection: Connection) {
    this.#connection = connection;
  }

  get closed(): boolean {
    const connection = this.#connection;
    return !connection?.native.open || !connection.native.inTransaction;
  }

  #open(): Connection {
    if (this.closed) throw new LibsqlError("The transaction is closed", "TRANSACTION_CLOSED");
    return this.#connection!;
  }

  async execute(stmt: InStatement): Promise<ResultSet> {
    return this.#open().execute(stmt);
  }

  async batch(stmts: InStatement[]): Promise<ResultSet[]> {
    return this.#open().executeAll(stmts);
  }

  async executeMultiple(sql: string): Promise<void> {
    try {
      this.#open().native.exec(sql);
    } catch (error) {
      throw libsqlError(error);
    }
  }

  async rollback(): Promise<void> {
    const connection = this.#connection;
    this.#connection = undefined;
    connection?.rollbackIfOpen();
  }

  async commit(): Promise<void> {
    const connection = this.#open();
    try {
      connection.execute("COMMIT");
    } finally {
      this.#connection = undefined;
      connection.rollbackIfOpen();
    }
  }

  close(): void {
    const connection = this.#connection;
    this.#connection = undefined;
    connection?.rollbackIfOpen();
  }

  /** The client closed or replaced the connection under this transaction. */
  abandon(): void {
    this.#connection = undefined;
  }
}
