/**
 * Raw-SQL helpers for atomic writes: every write of the API is one
 * `client.batch(statements, "write")`, i.e. one round trip and one transaction
 * (API.md §3: each write is one atomic database batch). Later statements of a
 * batch are made conditional on earlier ones with `changes()` guards, so the
 * batch as a whole either applies or changes nothing, without interactive
 * transactions.
 */
import type { InStatement, ResultSet } from "@libsql/client";
import type { Database } from "./client";
import { isRecordingCommits, recordCommitted, type CommittedEvent } from "./commit-log";

/** An outbox insert (API.md §6): `INSERT INTO events …`, however the statement was built. */
const OUTBOX_INSERT = /^\s*INSERT\s+INTO\s+events\b/i;

/**
 * Run statements as one atomic write transaction; one result set each. While
 * the request keeps a commit log (src/db/commit-log.ts), every outbox insert
 * of the batch returns the rows it inserted (`RETURNING type, data`, added
 * here) and they are recorded there as committed: exactly the changes the
 * batch made, since each event is written only when its change happened.
 */
export async function writeBatch(db: Database, statements: InStatement[]): Promise<ResultSet[]> {
  if (!isRecordingCommits()) return db.$client.batch(statements, "write");
  const outbox = statements.map((statement) => OUTBOX_INSERT.test(typeof statement === "string" ? statement : statement.sql));
  const sent = statements.map((statement, index) => {
    if (!outbox[index]) return statement;
    const { sql, args } = typeof statement === "string" ? { sql: statement, args: [] } : statement;
    return /\bRETURNING\b/i.test(sql) ? statement : { sql: `${sql} RETURNING type, data`, args };
  });
  const results = await db.$client.batch(sent, "write");
  const events: CommittedEvent[] = [];
  results.forEach((result, index) => {
    if (!outbox[index]) return;
    for (const row of result.rows) events.push({ type: String(row.type), data: JSON.parse(String(row.data)) as Record<string, unknown> });
  });
  recordCommitted(events);
  return results;
}

/** Run statements as one read transaction (one snapshot, one round trip). */
export function readBatch(db: Database, statements: InStatement[]): Promise<ResultSet[]> {
  return db.$client.batch(statements, "read");
}

/**
 * SQL that appends one event row (API.md §6, transactional outbox) whose data is
 * the JSON object produced by `dataSql` from `fromSql`, only when `guardSql` holds.
 * Example: `eventInsert("pet.created", PET_JSON, "pets p WHERE p.id = ?", ...)`.
 */
export function eventInsert(type: string, occurredAt: string, dataSql: string, fromWhereSql: string, args: unknown[]): InStatement {
  return {
    sql: `INSERT INTO events (type, occurred_at, data) SELECT ?, ?, ${dataSql} FROM ${fromWhereSql}`,
    args: [type, occurredAt, ...(args as never[])],
  };
}

/** Event data of a pet row aliased `p` (the Pet representation). */
export const PET_JSON = "json_object('id', p.id, 'name', p.name, 'categoryId', p.category_id, 'status', p.status)";

/** Event data of a category row aliased `c`; `description` is left out when NULL (RFC 7396 merge of a null member removes it). */
export const CATEGORY_JSON = "json_patch(json_object('id', c.id, 'name', c.name), json_object('description', c.description))";

/** Event data of an inventory row `i` joined to its pet `p` (the InventoryItem representation). */
export const INVENTORY_JSON = "json_object('petId', i.pet_id, 'quantity', i.quantity, 'status', p.status)";

/**
 * Event data of an order row aliased `o` (the Order representation): `complete`
 * as a JSON boolean, `shipDate` left out while NULL.
 */
export const ORDER_JSON =
  "json_patch(json_object('id', o.id, 'petId', o.pet_id, 'quantity', o.quantity, 'complete', json(CASE WHEN o.complete THEN 'true' ELSE 'false' END)), json_object('shipDate', o.ship_date))";

/**
 * True when a libSQL/SQLite error is a constraint violation. Matches by prefix
 * (`SQLITE_CONSTRAINT…`) because the embedded driver and sqld report different
 * extended codes for the same violation.
 */
export function isConstraintError(error: unknown): boolean {
  let e: unknown = error;
  for (let depth = 0; e && depth < 4; depth++) {
    const code = (e as { code?: unknown }).code;
    const extended = (e as { extendedCode?: unknown }).extendedCode;
    if (String(code).startsWith("SQLITE_CONSTRAINT") || String(extended).startsWith("SQLITE_CONSTRAINT")) return true;
    if (/UNIQUE constraint failed|CHECK constraint failed|FOREIGN KEY constraint failed/.test(String((e as Error).message))) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
