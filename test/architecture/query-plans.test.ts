/**
 * Every statement the app can send is planned against the migrated schema
 * (docs/database-cost.md): `EXPLAIN QUERY PLAN` of each shows no full scan of
 * a table and no temporary B-tree for ORDER BY, GROUP BY or DISTINCT, except
 * the allow-listed ones, each bounded for the reason it gives; and every
 * foreign key's child columns lead an index (a parent's delete or update
 * checks its children through it). Statements are collected as Drizzle builds
 * them: every module of src/ that builds statements is imported after the
 * dialect's `sqlToQuery` is wrapped, then every variant of every list query is
 * built (`buildAllVariants`).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Client, createClient } from "@libsql/client";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const SRC = fileURLToPath(new URL("../../src", import.meta.url));
/** Entry points (they read the environment and start things), not statement modules. */
const ENTRY_POINTS = new Set(["server.ts", "worker.ts"]);

/** The modules to import: all of src/ but the entry points and the Workers-only modules (they import `cloudflare:` modules). */
function statementModules(): string[] {
  return readdirSync(SRC, { recursive: true, encoding: "utf8" }).filter(
    (f) => f.endsWith(".ts") && !f.endsWith(".d.ts") && !ENTRY_POINTS.has(f) && !readFileSync(join(SRC, f), "utf8").includes('from "cloudflare:'),
  );
}

/** Plans allowed despite a scan or a temporary B-tree: what the statement is, and why its cost is bounded. */
const ALLOWED: { sql: RegExp; detail: RegExp; why: string }[] = [
  { sql: /"webhooks"/, detail: /^SCAN webhooks$/, why: "subscriptions: at most WEBHOOKS_MAX rows (500 by default)" },
  {
    sql: /WITH RECURSIVE t\(type\)/,
    detail: /^SCAN t$/,
    why: "the event types some subscription wants: a recursive CTE of one row per type, each found by the type index",
  },
  {
    sql: /"log_pending" union all/,
    detail: /^USE TEMP B-TREE FOR ORDER BY$/,
    why: "a delivery log page of every status: three key ranges of at most `limit` entries each, merged",
  },
  {
    sql: /CROSS JOIN \(SELECT 'delivered' AS status UNION ALL SELECT 'failed'\) AS s/,
    detail: /^SCAN (s|bounds)$/,
    why: "delivery retention: the two finished statuses (two constant rows), and a bound per subscription and status",
  },
  {
    sql: /ORDER BY until DESC LIMIT/,
    detail: /^USE TEMP B-TREE FOR ORDER BY$/,
    why: "a rotation's replaced secrets: the one replaced and those still signing, at most six rows",
  },
  {
    sql: /json_group_array\(DISTINCT "webhooks"\."id"\)/,
    detail: /^USE TEMP B-TREE FOR json_group_array\(DISTINCT\)$/,
    why: "a fan-out's subscriptions at the frontier: at most WEBHOOKS_MAX ids, one that wants two of the events' types listed once",
  },
  { sql: /json_each\(\?\)/, detail: /^USE TEMP B-TREE FOR ORDER BY$/, why: "a batch lookup by id: at most 100 ids, each found by primary key" },
  {
    sql: /^delete from "events"/,
    detail: /^SCAN events$/,
    why: "retention: the oldest events in id order, a scan from the start of the log bounded by its LIMIT (PRUNE_BATCH + 1)",
  },
];

const seen = new Set<string>();
let client: Client;
let dir: string;
let tables: Set<string>;

/** Import every module of src/ but the entry points, collecting the statements they build. */
async function collectStatements(): Promise<void> {
  const original = SQLiteAsyncDialect.prototype.sqlToQuery;
  SQLiteAsyncDialect.prototype.sqlToQuery = function (...args) {
    const query = original.apply(this, args);
    seen.add(query.sql);
    return query;
  };
  try {
    for (const file of statementModules()) await import(join(SRC, file));
    const { buildAllVariants } = await import("../../src/db/variants");
    buildAllVariants();
  } finally {
    SQLiteAsyncDialect.prototype.sqlToQuery = original;
  }
}

beforeAll(async () => {
  await collectStatements();
  dir = mkdtempSync(join(tmpdir(), "petstore-plans-"));
  client = createClient({ url: `file:${join(dir, "plans.db")}` });
  const { applyMigrations } = await import("../../src/db/migrate");
  await applyMigrations(client);
  const rows = await client.execute("SELECT name FROM sqlite_master WHERE type = 'table'");
  tables = new Set(rows.rows.map((row) => String(row.name)));
}, 60_000);

afterAll(() => {
  client?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The statements that read or write rows (not schema statements). */
function dataStatements(): string[] {
  return [...seen].filter((text) => /^\s*(select|insert|update|delete|with)\b/i.test(text)).sort();
}

/** Names a statement gives its own row sources: CTEs (`"x" as (`) and derived tables (`) "x"`). */
function derivedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const match of text.matchAll(/"(\w+)" as \(/g)) names.add(match[1]!);
  for (const match of text.matchAll(/\) "?(\w+)"?(?=[\s)]|$)/g)) names.add(match[1]!);
  return names;
}

/** The plan lines of `text` that scan a table or sort, and are not allowed. */
async function costlyPlanLines(text: string): Promise<string[]> {
  const plan = await client.execute(`EXPLAIN QUERY PLAN ${text}`);
  const derived = derivedNames(text);
  return plan.rows
    .map((row) => String(row.detail))
    .filter((detail) => {
      const scan = /^SCAN (\S+)/.exec(detail);
      const scansRows =
        scan !== null && !/VIRTUAL TABLE|^SCAN CONSTANT ROW|^SCAN \(subquery-\d+\)$/.test(detail) && (tables.has(scan[1]!) || !derived.has(scan[1]!));
      const costly = scansRows || /^USE TEMP B-TREE/.test(detail);
      return costly && !ALLOWED.some((allowed) => allowed.sql.test(text) && allowed.detail.test(detail));
    });
}

describe("query plans", () => {
  it("collects the statements of every module (lists, writes, background jobs)", () => {
    const texts = dataStatements();
    expect(texts.length).toBeGreaterThan(60);
    // One of each kind the checks below must see: a list variant, retention, the dispatcher.
    expect(texts.some((t) => /from "orders" where .*"complete" = \?/i.test(t))).toBe(true);
    expect(texts.some((t) => /^delete from "events"/i.test(t))).toBe(true);
    expect(texts.some((t) => /"webhook_deliveries"/.test(t))).toBe(true);
  });

  it("no statement scans a table or sorts in a temporary B-tree (but the allowed ones)", async () => {
    const costly: string[] = [];
    for (const text of dataStatements()) {
      const lines = await costlyPlanLines(text);
      if (lines.length > 0) costly.push(`${lines.join(" | ")}\n    ${text}`);
    }
    expect(costly.length, `${costly.length} statements with costly plans:\n${costly.join("\n")}`).toBe(0);
  });

  it("every foreign key's child columns lead an index", async () => {
    const missing: string[] = [];
    for (const table of tables) {
      const keys = await client.execute({
        sql: 'SELECT "table" AS parent, "from" AS child, seq FROM pragma_foreign_key_list(?) ORDER BY id, seq',
        args: [table],
      });
      const indexes = await client.execute({
        sql: "SELECT il.name, ii.seqno, ii.name AS col FROM pragma_index_list(?) il JOIN pragma_index_info(il.name) ii ORDER BY il.name, ii.seqno",
        args: [table],
      });
      const leading = new Map<string, string[]>();
      for (const row of indexes.rows) leading.set(String(row.name), [...(leading.get(String(row.name)) ?? []), String(row.col)]);
      for (const key of keys.rows) {
        const column = String(key.child);
        const pk = await client.execute({ sql: "SELECT pk FROM pragma_table_info(?) WHERE name = ?", args: [table, column] });
        const isRowid = Number(pk.rows[0]?.pk ?? 0) === 1;
        if (!isRowid && ![...leading.values()].some((cols) => cols[0] === column)) missing.push(`${table}.${column} → ${String(key.parent)}`);
      }
    }
    expect(missing.join(", "), "foreign keys whose child column leads no index").toBe("");
  });

  it("imports the services, retention and the dispatcher", () => {
    const files = statementModules();
    for (const file of ["services/retention.ts", "services/webhooks/dispatch.ts", "services/orders/list.ts"]) expect(files).toContain(file);
  });
});
