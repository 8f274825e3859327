/**
 * Database cost at realistic size (docs/database-cost.md): a sqld with a
 * generated dataset, and a meter that reads sqld's own counters (`rows_read`,
 * `rows_written` of every Hrana statement result) off the app's HTTP traffic.
 * Turso and D1 bill those rows (scanned, not returned), so the budgets of
 * test/architecture/database-cost.test.ts are stated in them.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Client, createClient } from "@libsql/client";
import { readMigrationFiles } from "drizzle-orm/migrator";
import { startSqld, type SqldServer } from "../../scripts/sqld";
import type { Database } from "../../src/db/client";
import { applyMigrations, MIGRATIONS_FOLDER } from "../../src/db/migrate";
import { openRemoteDatabase, type RequestFetch } from "../../src/db/driver/remote";
import { datasetStatements } from "./cost-dataset";

export { datasetSize } from "./cost-dataset";

/** One statement as sqld ran it: its SQL and its counters. */
export interface MeteredStatement {
  sql: string;
  rowsRead: number;
  rowsWritten: number;
  affectedRows: number;
}

/** What some work cost: the sums over its statements, and the statements. */
export interface Cost {
  rowsRead: number;
  rowsWritten: number;
  statements: MeteredStatement[];
}

interface HranaStmt {
  sql?: string;
  sql_id?: number;
}
interface HranaRequest {
  type: string;
  sql_id?: number;
  sql?: string;
  stmt?: HranaStmt;
  batch?: { steps: { stmt: HranaStmt }[] };
}
interface HranaResult {
  rows_read?: number;
  rows_written?: number;
  affected_row_count?: number;
  step_results?: (HranaResult | null)[];
}
interface HranaAnswer {
  baton?: string | null;
  results?: { type: string; response?: { type: string; result?: HranaResult } }[];
}

/**
 * Counts what sqld reports for every statement sent through `database()`
 * handles. Work is measured one piece at a time (`measure`), so one log serves.
 */
export class CostMeter {
  /** Every statement sent through the meter, in order. */
  readonly log: MeteredStatement[] = [];
  private readonly inFlight = new Set<Promise<unknown>>();
  /** SQL texts a stream stored (`store_sql`), by the baton of its next request. */
  private readonly stored = new Map<string, Map<number, string>>();

  constructor(private readonly url: string) {}

  /** `fetch` for a libSQL client: forwards, then pairs each statement of the request with its result. */
  readonly fetch: RequestFetch = (request) => {
    const done = this.forward(request);
    this.inFlight.add(done);
    void done.finally(() => this.inFlight.delete(done)).catch(() => {});
    return done;
  };

  private async forward(request: Request): Promise<Response> {
    const sent = request.method === "POST" ? await request.clone().text() : "";
    const response = await fetch(request);
    if (!sent || !response.ok) return response;
    const { baton, requests = [] } = JSON.parse(sent) as { baton?: string | null; requests?: HranaRequest[] };
    const sqls = (baton && this.stored.get(baton)) || new Map<number, string>();
    if (baton) this.stored.delete(baton);
    const answer = (await response.clone().json()) as HranaAnswer;
    if (answer.baton) this.stored.set(answer.baton, sqls);
    requests.forEach((req, i) => {
      if (req.type === "store_sql" && req.sql_id !== undefined && req.sql !== undefined) sqls.set(req.sql_id, req.sql);
      const result = answer.results?.[i]?.response?.result;
      if (!result) return;
      if (req.type === "execute" && req.stmt) this.record(req.stmt, result, sqls);
      if (req.type === "batch" && req.batch) {
        req.batch.steps.forEach((step, j) => {
          const stepResult = result.step_results?.[j];
          if (stepResult) this.record(step.stmt, stepResult, sqls);
        });
      }
    });
    return response;
  }

  private record(stmt: HranaStmt, result: HranaResult, stored: Map<number, string>): void {
    this.log.push({
      sql: stmt.sql ?? (stmt.sql_id === undefined ? undefined : stored.get(stmt.sql_id)) ?? `(stored SQL #${stmt.sql_id})`,
      rowsRead: result.rows_read ?? 0,
      rowsWritten: result.rows_written ?? 0,
      affectedRows: result.affected_row_count ?? 0,
    });
  }

  /** A new handle whose statements are counted (a new libSQL client, as the Worker builds per request). */
  database(): Database {
    return openRemoteDatabase(this.url, { fetch: this.fetch });
  }

  /** Wait until no request through the meter is in flight, including work started after a response. */
  async settle(): Promise<void> {
    for (let quiet = 0; quiet < 3; ) {
      await new Promise((resolve) => setImmediate(resolve));
      if (this.inFlight.size === 0) quiet += 1;
      else {
        quiet = 0;
        await Promise.allSettled([...this.inFlight]);
      }
    }
  }

  /** Run `work`, wait for the traffic it started, and return its value with its cost. */
  async measure<T>(work: () => Promise<T>): Promise<{ value: T; cost: Cost }> {
    await this.settle();
    const mark = this.log.length;
    const value = await work();
    await this.settle();
    const statements = this.log.slice(mark);
    const sum = (pick: (s: MeteredStatement) => number) => statements.reduce((total, s) => total + pick(s), 0);
    return { value, cost: { rowsRead: sum((s) => s.rowsRead), rowsWritten: sum((s) => s.rowsWritten), statements } };
  }
}

/** The `n` statements of `cost` that read or wrote most, one line each, for a failing budget's message. */
export function costliest(cost: Cost, n = Number(process.env.COSTLIEST ?? 3)): string {
  const top = [...cost.statements].sort((a, b) => b.rowsRead + b.rowsWritten - (a.rowsRead + a.rowsWritten)).slice(0, n);
  return top.map((s) => `  read ${s.rowsRead} written ${s.rowsWritten}: ${s.sql.replace(/\s+/g, " ").slice(0, 400)}`).join("\n");
}

/** A sqld with the migrated schema and the generated dataset, and a meter on it. */
export interface CostDatabase {
  url: string;
  /** Uncounted: for setup and for looking at the data. */
  raw: Client;
  meter: CostMeter;
  /** What the newest migration (its file name) cost, once, over the generated data. */
  migration: { name: string; cost: Cost };
  /** Row counts of every table of the app. */
  counts(): Promise<Record<string, number>>;
  /** The first column of the first row of `sql`, as a number (uncounted). */
  scalar(sql: string): Promise<number>;
  /** A new key of account `accountId` (its secret), last used `lastUsedAt`. */
  addKey(accountId: number, lastUsedAt?: Date): Promise<string>;
  stop(): Promise<void>;
}

/**
 * Start sqld on a temp directory, create the first schema, fill it at `scale`
 * (one statement per table, generated by SQL; see `datasetStatements`), and
 * apply the later migrations.
 */
export async function startCostDatabase(options: { scale: number; now: Date; hookUrl: (webhookId: number) => string }): Promise<CostDatabase> {
  const dir = mkdtempSync(join(tmpdir(), "petstore-cost-"));
  let sqld: SqldServer | undefined;
  try {
    sqld = await startSqld({ dataDir: join(dir, "sqld") });
    const raw = createClient({ url: sqld.url });
    // The data goes into the first schema (0000_init), as production data did; later migrations
    // then run over it, so whatever state they derive from the data is as they would make it.
    const [first] = readMigrationFiles({ migrationsFolder: MIGRATIONS_FOLDER });
    await raw.batch(
      [
        ...first!.sql.filter((s) => s.trim()),
        "CREATE TABLE __drizzle_migrations (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)",
        { sql: "INSERT INTO __drizzle_migrations (hash, created_at) VALUES (?, ?)", args: [first!.hash, first!.folderMillis] },
      ],
      "write",
    );
    for (const statement of datasetStatements(options.scale, options.now, options.hookUrl)) await raw.execute(statement);
    // The migrations between, then the newest one through the meter: what it costs, once, over this data.
    const later = readMigrationFiles({ migrationsFolder: MIGRATIONS_FOLDER }).slice(1);
    for (const m of later.slice(0, -1)) {
      await raw.batch(
        [
          "PRAGMA defer_foreign_keys = ON",
          ...m.sql.filter((s) => s.trim()),
          { sql: "INSERT INTO __drizzle_migrations (hash, created_at) VALUES (?, ?)", args: [m.hash, m.folderMillis] },
        ],
        "write",
      );
    }
    const meter = new CostMeter(sqld.url);
    const { cost: migration } = await meter.measure(() => applyMigrations(meter.database()));
    const tables = (
      await raw.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '\\_%' ESCAPE '\\'")
    ).rows.map((row) => String(row.name));
    const server = sqld;
    return {
      url: server.url,
      raw,
      meter: new CostMeter(server.url),
      migration: { name: newestMigrationName(), cost: migration },
      counts: async () => {
        const rs = await raw.execute(tables.map((t) => `SELECT '${t}' AS t, count(*) AS n FROM "${t}"`).join(" UNION ALL "));
        return Object.fromEntries(rs.rows.map((row) => [String(row.t), Number(row.n)]));
      },
      scalar: async (sql) => Number((await raw.execute(sql)).rows[0]?.[0]),
      addKey: async (accountId, lastUsedAt) => {
        const secret = `psk_${randomBytes(32).toString("base64url")}`;
        await raw.execute({
          sql: "INSERT INTO api_keys (account_id, name, prefix, secret_hash, created_at, last_used_at) VALUES (?, 'cost test', ?, ?, ?, ?)",
          args: [
            accountId,
            secret.slice(0, 10),
            createHash("sha256").update(secret).digest("hex"),
            options.now.toISOString(),
            lastUsedAt?.toISOString() ?? null,
          ],
        });
        return secret;
      },
      stop: async () => {
        raw.close();
        await server.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await sqld?.stop();
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

/** The file name of the newest migration (drizzle/meta/_journal.json's last entry). */
function newestMigrationName(): string {
  const journal = JSON.parse(readFileSync(join(MIGRATIONS_FOLDER, "meta", "_journal.json"), "utf8")) as { entries: { tag: string }[] };
  return journal.entries.at(-1)!.tag;
}

/** Rows changed between two `counts()`: rows inserted plus rows deleted, over every table. */
export function rowsChanged(before: Record<string, number>, after: Record<string, number>): number {
  return Object.keys({ ...before, ...after }).reduce((total, t) => total + Math.abs((after[t] ?? 0) - (before[t] ?? 0)), 0);
}

/** One line of the cost table. */
export interface CostRow {
  operation: string;
  returned: number | string;
  read: number;
  written: number;
  budget: string;
  ok: boolean;
}

/** The cost table as fixed-width text, failing rows marked. */
export function formatCostTable(rows: CostRow[]): string {
  const header = ["operation", "returned", "read", "written", "budget", ""];
  const cells = rows.map((r) => [r.operation, String(r.returned), String(r.read), String(r.written), r.budget, r.ok ? "ok" : "FAIL"]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[]) =>
    c
      .map((v, i) => (i >= 1 && i <= 3 ? v.padStart(widths[i]!) : v.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return [line(header), ...cells.map(line)].join("\n");
}
