/**
 * Every query goes through Drizzle: statements are built by the query builder
 * or the `sql` template with schema columns, and reach the libSQL client
 * through src/db/plan.ts (`execute`, `run`, `read`; Drizzle's `db.batch`
 * cannot choose the transaction mode). Scans every `src/**\/*.ts` file
 * (comments left out) and fails on a raw client call through the Drizzle
 * handle (`$client.execute`, `$client.batch`, …), a raw statement object
 * (`{ sql: … }`), or a name of the former raw helpers (`writeStatements`,
 * `eventInsert`, …), anywhere else, printing each with its line.
 *
 * Allowed besides src/db/plan.ts: the modules that construct or wrap the
 * libSQL `Client` itself, below Drizzle — src/db/open.ts (opens it, sets the
 * connection's PRAGMAs, answers the health check), src/db/guarded-client.ts
 * src/db/native-client.ts and src/db/remote.ts (are `Client`s: their `execute`/`batch` are the
 * client's own methods), src/db/round-trips.ts (counts the client's calls).
 * src/db/migrate.ts needs no exception: it runs in Drizzle's transaction.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const SRC = fileURLToPath(new URL("../../src/", import.meta.url));

/** Files (relative to src/) that may hand statements to the libSQL client themselves; see above. */
const ALLOWED = new Set(["db/plan.ts", "db/open.ts", "db/guarded-client.ts", "db/native-client.ts", "db/remote.ts", "db/round-trips.ts"]);

/** What only those files may write: a raw client call through the Drizzle handle, and a raw statement object. */
const RAW_SQL: { name: string; pattern: RegExp }[] = [
  { name: "raw client call", pattern: /\$client\s*\??\.\s*(execute|batch|executeMultiple|transaction|migrate)\b/g },
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
  it("the scan finds raw statements and raw client calls, not comments or Drizzle calls", () => {
    const sample = [
      "/** Sends `{ sql: … }` through `$client.execute`. */",
      'await db.$client.execute({ sql: "SELECT 1", args: [] });',
      "// await db.$client.batch([], 'write');",
      "await db",
      "  .$client.batch(statements);",
      "await db.run(sql`SELECT 1`);",
      "const { sql, params } = query.getQuery();",
      'import { eventInsert, writeBatch } from "../db/batch";',
    ].join("\n");
    expect(rawSql("x.ts", sample)).toEqual([
      'src/x.ts:2: raw client call: await db.$client.execute({ sql: "SELECT 1", args: [] });',
      "src/x.ts:5: raw client call: .$client.batch(statements);",
      'src/x.ts:2: raw statement object: await db.$client.execute({ sql: "SELECT 1", args: [] });',
      'src/x.ts:8: raw batch helper: import { eventInsert, writeBatch } from "../db/batch";',
    ]);
  });

  it("no raw statement, raw client call or raw batch helper outside the batch helpers and the client's own modules", () => {
    const files = sourceFiles();
    expect(files.length).toBeGreaterThan(50);
    for (const file of ALLOWED) expect(files, `${file} is allowed raw SQL but is not a source file`).toContain(file);
    const offending = files.filter((file) => !ALLOWED.has(file)).flatMap((file) => rawSql(file, readFileSync(join(SRC, file), "utf8")));
    expect(offending).toEqual([]);
  });
});
