/** The database port on an embedded file through libsql-js, answering as `@libsql/client` does (docs/internals.md#the-file-driver). */
import { Buffer } from "node:buffer";
import { LibsqlBatchError, LibsqlError, type InArgs, type InStatement, type InValue, type ResultSet, type Row, type Value } from "@libsql/client";
import Native from "libsql";
import { LRUCache } from "lru-cache";
import type { Database } from "../client";

type NativeStatement = ReturnType<InstanceType<typeof Native>["prepare"]>;

/** A compiled statement with what is known of it once compiled. */
interface Compiled {
  statement: NativeStatement;
  reader: boolean;
  columns: string[];
  columnTypes: string[];
  /** Each column name once, with its first position, but a name that is a position (as @libsql/client): a row's named values. */
  named: [string, number][];
  /** Prototype of its rows: positions read the row's values; `length` is the column count. */
  rowPrototype: object;
}

const VALUES = Symbol("values");

/** SQLite primary result codes by number (https://sqlite.org/rescode.html). */
const BASE_CODES = (
  "OK ERROR INTERNAL PERM ABORT BUSY LOCKED NOMEM READONLY INTERRUPT IOERR CORRUPT NOTFOUND FULL CANTOPEN PROTOCOL " +
  "EMPTY SCHEMA TOOBIG CONSTRAINT MISMATCH MISUSE NOLFS AUTH FORMAT RANGE NOTADB NOTICE WARNING"
)
  .split(" ")
  .map((name) => `SQLITE_${name}`);

/** libsql-js's SqliteError as a LibsqlError (code: the primary code's name; extendedCode: libsql's). Other errors unchanged. */
function libsqlError(error: unknown): unknown {
  if (!(error instanceof Native.SqliteError)) return error;
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
  if (typeof value === "number" && !Number.isFinite(value)) throw new RangeError("Only finite numbers (not Infinity or NaN) can be passed as arguments");
  if (typeof value === "bigint" && (value < MIN_INT64 || value > MAX_INT64)) {
    throw new RangeError("bigint is too large to be represented as a 64-bit integer and passed as argument");
  }
  if (typeof value === "boolean") return value ? 1 : 0;
  if (value instanceof ArrayBuffer) return Buffer.from(value);
  if (value instanceof Date) return value.valueOf();
  if (value === undefined) throw new TypeError("undefined cannot be passed as argument to the database");
  return value;
}

/** A column value as the app reads it. @throws RangeError for an integer beyond ±2^53. */
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

function resultSet(columns: string[], columnTypes: string[], rows: Row[], rowsAffected: number, lastInsertRowid: bigint | undefined): ResultSet {
  return { columns, columnTypes, rows, rowsAffected, lastInsertRowid, toJSON: () => ({ columns, rows: rows.map((row) => Array.from(row)), rowsAffected }) };
}

const BEGIN = { write: "BEGIN IMMEDIATE", read: "BEGIN TRANSACTION READONLY" } as const;

/** Most compiled statements a connection keeps; the least recently used are dropped. */
const MAX_STATEMENTS = 500;

/** The connection and its compiled statements. */
class Connection {
  readonly native: InstanceType<typeof Native>;
  readonly #statements: LRUCache<string, Compiled>;

  /** Open `path`, check that it answers and run `setup`. @throws LibsqlError. */
  constructor(path: string, setup: readonly string[]) {
    try {
      this.native = new Native(path, { timeout: 0 });
    } catch (error) {
      throw libsqlError(error);
    }
    this.#statements = new LRUCache({ max: MAX_STATEMENTS });
    try {
      for (const sql of ["SELECT 1", ...setup]) this.execute({ sql, args: [] });
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
    const position = (name: string) => /^(0|[1-9]\d*)$/.test(name) && Number(name) < columns.length;
    const named = [...new Map(columns.map((name, i) => [name, i] as const).reverse())].reverse().filter(([name]) => !position(name));
    compiled = { statement, reader, columns, columnTypes: described.map((c) => c.type ?? ""), named, rowPrototype: rowPrototypeFor(columns) };
    this.#statements.set(sql, compiled);
    return compiled;
  }

  /** Run one statement. @throws LibsqlError, RangeError, TypeError. */
  execute(stmt: InStatement): ResultSet {
    const { sql, args } = typeof stmt === "string" ? { sql: stmt, args: undefined } : stmt;
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

  /** Run `stmts` in one transaction; a failure is a LibsqlBatchError naming the statement (the caller rolls back). */
  batch(stmts: readonly InStatement[], mode: "read" | "write"): ResultSet[] {
    this.execute(BEGIN[mode]);
    const results = stmts.map((stmt, index) => {
      if (!this.native.inTransaction) throw new LibsqlBatchError("The transaction has been rolled back", index, "TRANSACTION_CLOSED");
      try {
        return this.execute(stmt);
      } catch (error) {
        if (!(error instanceof LibsqlError) || error instanceof LibsqlBatchError) throw error;
        const cause = error.cause instanceof Error ? error.cause : undefined;
        throw new LibsqlBatchError(error.message, index, error.code, error.extendedCode, error.rawCode, cause);
      }
    });
    this.execute("COMMIT");
    return results;
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
export class NativeFile implements Database {
  readonly #connect: () => Connection;
  #connection: Connection;
  #closed = false;

  /** Open `path` (created if missing), check it answers, run `connectionSetup` (per-connection pragmas) on each connection. @throws LibsqlError (SQLITE_BUSY…). */
  constructor(path: string, options: { connectionSetup?: readonly string[] } = {}) {
    this.#connect = () => new Connection(path, options.connectionSetup ?? []);
    this.#connection = this.#connect();
  }

  #open(): Connection {
    if (this.#closed) throw new LibsqlError("The client is closed", "CLIENT_CLOSED");
    return this.#connection;
  }

  async execute(stmt: InStatement): Promise<ResultSet> {
    return this.#open().execute(stmt);
  }

  /** @throws LibsqlBatchError (the failed statement's index; nothing committed), LibsqlError. */
  async batch(stmts: InStatement[], mode: "read" | "write"): Promise<ResultSet[]> {
    const connection = this.#open();
    try {
      return connection.batch(stmts, mode);
    } finally {
      // What the batch left open is rolled back; a connection that cannot roll back is replaced.
      if (!connection.rollbackIfOpen() && connection === this.#connection && !this.#closed) this.reconnect();
    }
  }

  /** A new connection, with its setup statements; the compiled statements of the old one are dropped. @throws LibsqlError (CLIENT_CLOSED once closed). */
  reconnect(): void {
    this.#open().close();
    this.#connection = this.#connect();
  }

  close(): void {
    this.#closed = true;
    this.#connection.close();
  }
}
