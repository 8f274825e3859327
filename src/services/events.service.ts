/**
 * The event log (API.md §6): the `events` table is a transactional outbox that
 * every write appends to in its own batch (src/db/events.ts), so
 * the log never disagrees with the data. This module reads it in commit order.
 *
 * Commit order = id order: SQLite (embedded or sqld) has one writer at a time
 * and assigns AUTOINCREMENT ids inside the write transaction, so an event with
 * a smaller id is always committed before one with a larger id; a reader that
 * resumes `after` the last id it saw can never miss an event.
 */
import { gt, sql } from "drizzle-orm";
import { perDatabase } from "../db/batch";
import type { Database } from "../db/client";
import { events } from "../db/schema";
import { EVENT_TYPES, type EventType } from "../domain/events";

export { EVENT_TYPES, type EventType };

/** Event representation: `data` is the resource after the change (for deletions: its last state). */
export interface Event {
  id: number;
  type: EventType;
  /** RFC 3339 UTC instant of the change. */
  occurredAt: string;
  data: Record<string, unknown>;
}

/** The statements of this module, prepared once per database. */
const queries = perDatabase((db) => ({
  list: db
    .select()
    .from(events)
    .where(gt(events.id, sql.placeholder("afterId")))
    .orderBy(events.id)
    .limit(sql.placeholder("limit"))
    .prepare(),
}));

/** Map an `events` row: `data` is JSON text of an object. */
export function toEvent(row: typeof events.$inferSelect): Event {
  return { id: row.id, type: row.type, occurredAt: row.occurredAt, data: JSON.parse(row.data) as Record<string, unknown> };
}

/** Up to `limit` events with id > `afterId`, in commit (id) order. One round trip. */
export async function listEvents(db: Database, afterId: number, limit: number): Promise<Event[]> {
  const rows = await queries(db).list.all({ afterId, limit });
  return rows.map(toEvent);
}
