/**
 * The file driver (src/db/driver/native-file.ts) against `@libsql/client`'s file
 * client on two fresh database files: the same statements give the same
 * result sets (rows by position and by name, enumerable names only,
 * rowsAffected, lastInsertRowid, JSON of the rows), the same errors (codes, the failed
 * statement of a batch, rollback), and each SQL text is compiled once, also
 * after a statement of it failed.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Client, createClient, type InArgs, type InStatement, type ResultSet } from "@libsql/client";
import Database from "libsql";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { Database as Port } from "../../src/db/client";
import { NativeFile } from "../../src/db/driver/native-file";

let dir: string;
let native: NativeFile;
let reference: Client;

const SCHEMA = [
  "CREATE TABLE items (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL UNIQUE, qty INTEGER NOT NULL CHECK (qty >= 0), data BLOB, price REAL)",
  "CREATE TABLE log (id INTEGER PRIMARY KEY, item_id INTEGER NOT NULL REFERENCES items(id))",
];

/** What a caller can observe of a result set. */
function observed(rs: ResultSet) {
  return {
    columns: rs.columns,
    columnTypes: rs.columnTypes,
    rowsAffected: rs.rowsAffected,
    lastInsertRowid: rs.lastInsertRowid,
    byPosition: rs.rows.map((row) => Array.prototype.slice.call(row)),
    byName: rs.rows.map((row) => Object.fromEntries(rs.columns.map((c) => [c, row[c]]))),
    keys: rs.rows.map((row) => Object.keys(row)),
    // A spread copies enumerable own symbols too: a row has none beyond its column names.
    spread: rs.rows.map((row) => ({ ...row })),
    lengths: rs.rows.map((row) => row.length),
    json: JSON.stringify(rs.rows),
  };
}

async function both<T>(run: (db: Port) => Promise<T>): Promise<[T, T]> {
  return [await run(native), await run(reference)];
}

async function failure(promise: Promise<unknown>) {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e as { name: string; code: string; extendedCode?: string; statementIndex?: number },
  );
  return error && { name: error.name, code: error.code, extendedCode: error.extendedCode, statementIndex: error.statementIndex };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "petstore-native-"));
  const setup = ["PRAGMA foreign_keys = ON"];
  native = new NativeFile(join(dir, "native.db"), { connectionSetup: setup });
  reference = createClient({ url: `file:${join(dir, "reference.db")}`, concurrency: 1 });
  for (const sql of setup) await reference.execute(sql);
  for (const client of [native, reference]) for (const sql of SCHEMA) await client.execute(sql);
});

afterAll(() => {
  native.close();
  reference.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("the file driver", () => {
  it("answers like @libsql/client: writes, RETURNING, reads by position and name, blobs, reals, duplicate and numeric column names", async () => {
    const statements: { sql: string; args: InArgs }[] = [
      { sql: "INSERT INTO items (name, qty, data, price) VALUES (?, ?, ?, ?)", args: ["a", 3, new Uint8Array([1, 2, 3]).buffer, 1.5] },
      { sql: "INSERT INTO items (name, qty) VALUES (?, ?) RETURNING id, name, qty", args: ["b", 0] },
      { sql: "INSERT INTO items (name, qty) VALUES (:name, :qty)", args: { ":name": "c", ":qty": true } },
      { sql: "UPDATE items SET qty = qty + 1 WHERE qty >= ?", args: [0] },
      { sql: "SELECT id, name, qty, data, price, NULL AS empty FROM items ORDER BY id", args: [] },
      { sql: "SELECT i.id, l.id, i.name FROM items i LEFT JOIN log l ON l.item_id = i.id ORDER BY i.id", args: [] },
      { sql: "SELECT count(*) AS n, changes() AS c FROM items", args: [] },
      // Column names that are also positions: a position reads its own column, whatever another is named.
      { sql: 'SELECT 7, 0, NULL, name AS "1" FROM items ORDER BY id', args: [] },
      { sql: "DELETE FROM items WHERE name = ?", args: ["nobody"] },
    ];
    for (const statement of statements) {
      const [got, expected] = await both((c) => c.execute(statement));
      expect(observed(got), statement.sql).toEqual(observed(expected));
    }
    const [got, expected] = await both((c) => c.batch(statements.slice(4), "read"));
    expect(got.map(observed)).toEqual(expected.map(observed));
  });

  it("fails like @libsql/client: constraint codes, the failed statement of a batch, rollback; the statement then runs again", async () => {
    const insert = (name: string, qty: number): InStatement => ({ sql: "INSERT INTO items (name, qty) VALUES (?, ?)", args: [name, qty] });
    const [dup, dupRef] = await both((c) => failure(c.execute(insert("a", 1))));
    expect(dup).toEqual(dupRef);
    expect(dup).toMatchObject({ code: "SQLITE_CONSTRAINT", extendedCode: "SQLITE_CONSTRAINT_UNIQUE" });

    const batch = [insert("x", 1), insert("y", -1), insert("z", 1)];
    const [failed, failedRef] = await both((c) => failure(c.batch(batch, "write")));
    expect(failed).toEqual(failedRef);
    expect(failed).toMatchObject({ name: "LibsqlBatchError", statementIndex: 1, code: "SQLITE_CONSTRAINT" });
    const [count, countRef] = await both((c) => c.execute("SELECT count(*) AS n FROM items WHERE name IN ('x', 'y', 'z')"));
    expect(observed(count)).toEqual(observed(countRef));
    expect(count.rows[0]!.n).toBe(0);

    const [fk, fkRef] = await both((c) => failure(c.execute({ sql: "INSERT INTO log (item_id) VALUES (?)", args: [999] })));
    expect(fk).toEqual(fkRef);
    const [big, bigRef] = await both((c) => failure(c.execute("SELECT 9007199254740993 AS big")));
    expect(big?.name).toBe("RangeError");
    expect(bigRef?.name).toBe("RangeError");

    const [ok, okRef] = await both((c) => c.batch([insert("x", 1), insert("z", 2)], "write"));
    expect(ok.map(observed)).toEqual(okRef.map(observed));
  });

  it("compiles each SQL text once, across calls and batches", async () => {
    const prepare = vi.spyOn(Database.prototype, "prepare");
    try {
      const sql = "SELECT qty FROM items WHERE name = ?";
      for (let i = 0; i < 20; i++) await native.execute({ sql, args: ["a"] });
      await native.batch(
        Array.from({ length: 20 }, () => ({ sql, args: ["b"] })),
        "read",
      );
      const compiled = prepare.mock.calls.filter(([text]) => text === sql);
      expect(compiled).toHaveLength(1);
    } finally {
      prepare.mockRestore();
    }
  });
});
