/** The outbox (docs/architecture.md#writes-one-batch-named-plans): `INSERT INTO events … SELECT … WHERE <condition>` in the write's batch: events exactly when it changed. */
import { and, eq, type Placeholder, sql, type SQL } from "drizzle-orm";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import type { EventType } from "../domain/events";
import { qb } from "./client";
import { type Params, writeTraceparent } from "./plan";
import { events, INVENTORY_ITEM, inventory, PET, pets } from "./schema";
import { aliasedColumns } from "./select-list";

/** An outbox insert's select list, every column of `events` in order: a new id, `type`, `p`'s `occurredAt`, `data`, the write's `traceparent`. */
export function eventColumns<V extends { occurredAt: string }>(p: Params<V>, type: EventType, data: SQL<string>) {
  return aliasedColumns({
    id: sql<number>`NULL`,
    type: sql<EventType>`${type}`,
    occurredAt: sql<string>`${p("occurredAt")}`,
    data,
    traceparent: sql<string | null>`${writeTraceparent}`,
  } satisfies Record<keyof typeof events.$inferSelect, SQL>);
}

/** The select of a `pet.updated` event for pet `petId`, only when `changed` (the guard of `guarded`, src/db/plan.ts) holds; for an insert-select or a `unionAll`. */
export function petUpdatedIfChanged<V extends { occurredAt: string }>(p: Params<V>, petId: SQL | Placeholder, changed: SQL) {
  return qb
    .select(eventColumns(p, "pet.updated", PET.json()))
    .from(pets)
    .where(and(eq(pets.id, petId), changed));
}

/** The select of an `inventory.updated` event for the pet whose id is `petId` (its inventory row joined to the pet), written when `condition` holds. */
export function inventoryUpdatedWhen<V extends { occurredAt: string }>(p: Params<V>, petId: SQL | Placeholder, condition: SQL) {
  return qb
    .select(eventColumns(p, "inventory.updated", INVENTORY_ITEM.json()))
    .from(inventory)
    .innerJoin(pets, eq(pets.id, inventory.petId))
    .where(and(eq(inventory.petId, petId), condition));
}

/** Insert the events `rows` selects (a select, or `unionAll` of selects, of `eventColumns`), returning what an outbox step needs (src/db/plan.ts `outbox`): each event's `type` and `data`. */
export function insertEventRows(rows: Parameters<ReturnType<typeof qb.insert<typeof events>>["select"]>[0]) {
  return qb.insert(events).select(rows).returning({ type: events.type, data: events.data });
}

/** Insert a `type` event with `data` (JSON built in SQL) for each row of `from` where `where` holds (see `insertEventRows`). */
export function insertEvents<V extends { occurredAt: string }>(p: Params<V>, type: EventType, data: SQL<string>, from: SQLiteTable, where: SQL | undefined) {
  return insertEventRows(
    qb
      .select(eventColumns(p, type, data))
      .from(from)
      .where(where),
  );
}
