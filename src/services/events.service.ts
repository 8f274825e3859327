/** The event log (docs/api.md#events-and-webhooks): the `events` outbox in commit (id) order, so a reader resuming after its last id misses nothing. */
import { selectPage } from "../db/by-id";
import { type Database, qb } from "../db/client";
import { execute } from "../db/plan";
import { events } from "../db/schema";

/** Event representation: an `events` row (`occurredAt` RFC 3339 UTC) whose `data` is the resource after the change (for deletions: its last state). */
export type Event = Omit<typeof events.$inferSelect, "data" | "traceparent"> & { data: Record<string, unknown> };

const eventsAfter = selectPage(qb.select().from(events).$dynamic(), events.id);

/** Up to `limit` events with id > `afterId`, in commit (id) order. One round trip. */
export async function listEvents(db: Database, afterId: number, limit: number): Promise<Event[]> {
  const rows = await execute(db, eventsAfter, { afterId, limit });
  // `data` is JSON text of an object.
  return rows.map((row) => ({ id: row.id, type: row.type, occurredAt: row.occurredAt, data: JSON.parse(row.data) as Record<string, unknown> }));
}
