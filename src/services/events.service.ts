/**
 * The event log (API.md §6): the `events` table is a transactional outbox that
 * every write appends to in its own batch (src/db/batch.ts `eventInsert`), so
 * the log never disagrees with the data. This module reads it in commit order.
 *
 * Commit order = id order: SQLite (embedded or sqld) has one writer at a time
 * and assigns AUTOINCREMENT ids inside the write transaction, so an event with
 * a smaller id is always committed before one with a larger id; a reader that
 * resumes `after` the last id it saw can never miss an event.
 */
import type { Row } from "@libsql/client";
import type { Database } from "../db/client";

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

/** Map an `events` row (`id, type, occurred_at, data`). */
export function toEvent(row: Row): Event {
  return {
    id: Number(row.id),
    type: String(row.type) as EventType,
    occurredAt: String(row.occurred_at),
    data: JSON.parse(String(row.data)) as Record<string, unknown>,
  };
}

/** Up to `limit` events with id > `afterId`, in commit (id) order. One round trip. */
export async function listEvents(db: Database, afterId: number, limit: number): Promise<Event[]> {
  const rs = await db.$client.execute({
    sql: "SELECT id, type, occurred_at, data FROM events WHERE id > ? ORDER BY id LIMIT ?",
    args: [afterId, limit],
  });
  return rs.rows.map(toEvent);
}
