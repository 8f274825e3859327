/**
 * Every query goes through Drizzle: statements are built by the query builder
 * or the `sql` template with schema columns, and reach the libSQL client
 * through src/db/plan.ts (`execute`, `run`, `read`; Drizzle's `db.batch`
 * cannot choose the transaction mode). Scans every `src/**\/*.ts` file
 * (comments left out) and fails on a direct call of the database port
 * (`db.execute`, `db.batch`, a method called with SQL text), a raw statement
 * object (`{ sql: … }`), or a name of the former raw helpers
 * (`writeStatements`, `eventInsert`, …), anywhere else, printing each with its line.
 *
 * Allowed besides src/db/plan.ts: the drivers behind the port
 * (src/db/driver/: they open the database, set its PRAGMAs, answer the
 * health check, wrap the port's calls), src/db/round-trips.ts (counts the
 * port's calls), src/db/traced.ts (traces and times them) and src/db/migrate.ts, which sends the SQL of drizzle-kit's
 * migration files and Drizzle's bookkeeping.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const SRC = fileURLToPath(new URL("../../src/", import.meta.url));

/** Files (relative to src/) that may hand statements to the database port themselves; see above. */
const ALLOWED = new Set(["db/plan.ts", "db/migrate.ts", "db/round-trips.ts", "db/traced.ts"]);
const ALLOWED_FOLDER = "db/driver/";

/** What only those files may write: a direct call of the port, SQL text handed to a method, and a raw statement object. */
const RAW_SQL: { name: string; pattern: RegExp }[] = [
  { name: "raw port call", pattern: /\b(db|\$client)\s*\??\.\s*(execute|batch|executeMultiple|transaction|migrate)\b/g },
  { name: "SQL text", pattern: /\.(execute|batch)\(\s*["'`]/g },
  { name: "raw statement object", pattern: /\{\s*sql\s*:/g },
  // The former raw helpers: raw SQL strings, not always `{ sql: … }`.
  { name: "raw batch helper", pattern: /\b(writeStatements|readStatements|eventInsert|PET_JSON|CATEGORY_JSON|INVENTORY_JSON|ORDER_JSON)\b/g },
];

/** Every .ts file under `dir`, as paths relative to src/ with `/` separators. */
function sourceFiles(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts") ? [relative(SRC, path).split(sep).join("/")] : [];
  });
}

/** `source` with its comments blanked (line numbers kept): block comments and whole-line `//` comments. */
function withoutComments(source: string): string {
  return source.replace(/\/\*[\s\S]*?\*\//g, (comment) => comment.replace(/[^\n]/g, " ")).replace(/^\s*\/\/.*$/gm, "");
}

/** Each raw statement or raw client call in `source`, as `file:line: kind: text`. */
function rawSql(file: string, source: string): string[] {
  const code = withoutComments(source);
  return RAW_SQL.flatMap(({ name, pattern }) =>
    [...code.matchAll(pattern)].map((m) => {
      const line = code.slice(0, m.index).split("\n").length;
      return `src/${file}:${line}: ${name}: ${source.split("\n")[line - 1]!.trim()}`;
    }),
  );
}

describe("SQL goes through Drizzle", () => {
  it("the scan finds raw statements and direct port calls, not comments or Drizzle calls", () => {
    const sample = [
      "/** Sends `{ sql: … }` through `$client.execute`. */",
      'await db.execute({ sql: "SELECT 1", args: [] });',
      "// await db.batch([], 'write');",
      "await db",
      "  .batch(statements);",
      "await db.run(sql`SELECT 1`);",
      "const { sql, params } = query.getQuery();",
      'import { eventInsert, writeBatch } from "../db/batch";',
      'await file.execute("PRAGMA journal_mode = WAL");',
    ].join("\n");
    expect(rawSql("x.ts", sample)).toEqual([
      'src/x.ts:2: raw port call: await db.execute({ sql: "SELECT 1", args: [] });',
      "src/x.ts:4: raw port call: await db",
      'src/x.ts:9: SQL text: await file.execute("PRAGMA journal_mode = WAL");',
      'src/x.ts:2: raw statement object: await db.execute({ sql: "SELECT 1", args: [] });',
      'src/x.ts:8: raw batch helper: import { eventInsert, writeBatch } from "../db/batch";',
    ]);
  });

  it("no raw statement, direct port call or raw batch helper outside src/db/plan.ts and the drivers", () => {
    const files = sourceFiles();
    expect(files.length).toBeGreaterThan(50);
    for (const file of ALLOWED) expect(files, `${file} is allowed raw SQL but is not a source file`).toContain(file);
    const offending = files
      .filter((file) => !ALLOWED.has(file) && !file.startsWith(ALLOWED_FOLDER))
      .flatMap((file) => rawSql(file, readFileSync(join(SRC, file), "utf8")));
    expect(offending).toEqual([]);
  });
});
