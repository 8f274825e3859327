/** The outbox inserts the services share (docs/architecture.md#events-after-a-write). */
import type { SQL } from "drizzle-orm";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import { qb } from "../db/client";
import { eventColumns, outboxRow } from "../db/events";
import type { Params } from "../db/plan";
import { events } from "../db/schema";
import type { EventType } from "../domain/events";

/** The rows of events to insert: a select (or `unionAll` of selects) of `eventColumns`. */
type EventRows = Parameters<ReturnType<typeof qb.insert<typeof events>>["select"]>[0];

/** Insert the events `rows` selects, returning `outboxRow`. */
export function insertEventRows(rows: EventRows) {
  return qb.insert(events).select(rows).returning(outboxRow);
}

/** Insert a `type` event with `data` (JSON built in SQL) for each row of `from` where `where` holds, returning `outboxRow`. */
export function insertEvents<V extends { occurredAt: string }>(p: Params<V>, type: EventType, data: SQL<string>, from: SQLiteTable, where: SQL | undefined) {
  return insertEventRows(
    qb
      .select(eventColumns(p, type, data))
      .from(from)
      .where(where),
  );
}
