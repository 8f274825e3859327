/**
 * Inventory entries (API.md §2-§3): the quantity that can still be
 * ordered, with the pet's status as the single source of truth for `status`.
 */
import { and, eq, gt, sql } from "drizzle-orm";
import type { Database } from "../db/client";
import { perDatabase, preparedVariants, step, writeBatch } from "../db/batch";
import { eventColumns, inventoryDataWith, petDataWithStatus } from "../db/events";
import { events, inventory, orders, pets } from "../db/schema";
import { unionAll } from "drizzle-orm/sqlite-core";
import type { PetStatus } from "../domain/pets";
import { ApiError, notFound } from "../lib/errors";
import { assertIfMatch } from "../lib/http-cache";

/** InventoryItem representation. */
export interface InventoryItem {
  petId: number;
  quantity: number;
  status: PetStatus;
}

export interface InventoryFilter {
  status?: PetStatus;
  petIds?: number[];
}

/** The columns of the InventoryItem representation, from `inventory` joined to `pets`. */
const itemColumns = { petId: inventory.petId, quantity: inventory.quantity, status: pets.status };

/**
 * The list query for one combination of filters (placeholders `afterPetId`,
 * `limit`, and `status`, `petIds` (a JSON array) when filtered): a fixed query
 * per combination, built on first use, once per database. The pets are
 * matched through `json_each`, so any number of them binds to one prepared
 * query; SQLite still looks each one up by primary key, as with `IN (?, …)`.
 */
const listQuery = preparedVariants((db: Database, byStatus: boolean, byPets: boolean) =>
  db
    .select(itemColumns)
    .from(inventory)
    .innerJoin(pets, eq(pets.id, inventory.petId))
    .where(
      and(
        gt(inventory.petId, sql.placeholder("afterPetId")),
        byStatus ? eq(pets.status, sql.placeholder("status")) : undefined,
        byPets ? sql`${inventory.petId} in (select value from json_each(${sql.placeholder("petIds")}))` : undefined,
      ),
    )
    .orderBy(inventory.petId)
    .limit(sql.placeholder("limit"))
    .prepare(),
);

/** Up to `limit` entries with petId > `afterPetId`, ascending. One round trip. */
export async function listInventory(db: Database, filter: InventoryFilter, afterPetId: number, limit: number): Promise<InventoryItem[]> {
  const query = listQuery(db, filter.status !== undefined, filter.petIds !== undefined);
  return query.all({ afterPetId, limit, status: filter.status ?? null, petIds: filter.petIds ? JSON.stringify(filter.petIds) : null });
}

/** The entry of the pet (placeholder `petId`). */
const itemQuery = perDatabase((db) =>
  db
    .select(itemColumns)
    .from(inventory)
    .innerJoin(pets, eq(pets.id, inventory.petId))
    .where(eq(inventory.petId, sql.placeholder("petId")))
    .prepare(),
);

/** @throws ApiError 404 when the pet has no entry (no such pet). One round trip. */
export async function getInventoryItem(db: Database, petId: number): Promise<InventoryItem> {
  const item = await itemQuery(db).get({ petId });
  if (!item) throw notFound("Inventory entry of pet", petId);
  return item;
}

/** The entry of the pet (placeholder `petId`) with the versions of both rows behind it. */
const versionedItemQuery = perDatabase((db) =>
  db
    .select({ ...itemColumns, inventoryVersion: inventory.version, petVersion: pets.version })
    .from(inventory)
    .innerJoin(pets, eq(pets.id, inventory.petId))
    .where(eq(inventory.petId, sql.placeholder("petId")))
    .prepare(),
);

/**
 * The statements of setting a pet's stock, built once per database.
 * Placeholders: `petId`, `quantity`, `occurredAt` (now), `inventoryVersion`
 * and `petVersion` (the versions checked; NULL without If-Match).
 */
const setQueries = perDatabase((db) => {
  /** The precondition, on rows not yet written by this batch (always true without If-Match). */
  const checked = sql`(${sql.placeholder("inventoryVersion")} is null or (
    (select ${inventory.version} from ${inventory} where ${inventory.petId} = ${sql.placeholder("petId")}) = ${sql.placeholder("inventoryVersion")}
    and (select ${pets.version} from ${pets} where ${pets.id} = ${sql.placeholder("petId")}) = ${sql.placeholder("petVersion")}))`;
  /** The pet's status with the new quantity (API.md §3). */
  const newStatus = sql<PetStatus>`(case when ${sql.placeholder("quantity")} > 0 then 'available'
    when exists (select 1 from ${orders} where ${orders.petId} = ${sql.placeholder("petId")} and ${orders.complete} = 0) then 'pending' else 'sold' end)`;
  return {
    /**
     * The events, computed from the new values before the rows change:
     * `pet.updated` (when the status changes), then `inventory.updated`. One
     * statement: SQLite runs the members of a UNION ALL one after another, so
     * the rows are inserted (and numbered) in this order.
     */
    events: db
      .insert(events)
      .select(
        unionAll(
          db
            .select(eventColumns("pet.updated", petDataWithStatus(newStatus)))
            .from(pets)
            .where(and(eq(pets.id, sql.placeholder("petId")), sql`${pets.status} <> ${newStatus}`, checked)),
          db
            .select(eventColumns("inventory.updated", inventoryDataWith(sql<number>`${sql.placeholder("quantity")}`, newStatus)))
            .from(inventory)
            .where(and(eq(inventory.petId, sql.placeholder("petId")), checked)),
        ),
      )
      .prepare(),
    /** The pet row is updated whenever the check holds; its version moves only when its status does. */
    petStatus: db
      .update(pets)
      .set({ status: newStatus, version: sql`${pets.version} + (${pets.status} <> ${newStatus})` })
      .where(and(eq(pets.id, sql.placeholder("petId")), checked))
      .prepare(),
    setQuantity: db
      .update(inventory)
      .set({ quantity: sql`${sql.placeholder("quantity")}`, version: sql`${inventory.version} + 1` })
      .where(and(eq(inventory.petId, sql.placeholder("petId")), sql`changes() = 1`))
      .prepare(),
  };
});

/**
 * Set a pet's stock (API.md §3): n > 0 makes the pet available; n = 0 makes it
 * pending when it has open orders, else sold. One batch (after a read only for
 * If-Match).
 *
 * With If-Match the batch carries the versions of both rows behind the
 * representation (quantity: inventory; status: pet) that the ETag was checked
 * against, and a 412 changes nothing: every statement tests them on rows this
 * batch has not written yet — both events first (their data computed from the
 * new values), then the pet row, which is updated whenever the check holds
 * (its version moves only when its status does), then the inventory row,
 * guarded by `changes()` of the pet statement. Checking "already written by
 * this batch" through a bumped version instead cannot tell this batch's write
 * from a concurrent winner's: the loser of a race saved its status change and
 * events (issue 11).
 * @throws ApiError 404, 412 `precondition_failed`.
 */
export async function setInventory(db: Database, petId: number, quantity: number, ifMatch: string | undefined, now: Date): Promise<InventoryItem> {
  // With If-Match, the versions of both rows seen by the check.
  let seen: { inventoryVersion: number; petVersion: number } | null = null;
  if (ifMatch !== undefined) {
    const current = await versionedItemQuery(db).get({ petId });
    if (!current) throw notFound("Inventory entry of pet", petId);
    const { inventoryVersion, petVersion, ...item } = current;
    await assertIfMatch(ifMatch, item);
    seen = { inventoryVersion, petVersion };
  }
  const values = { petId, quantity, occurredAt: now.toISOString(), inventoryVersion: seen?.inventoryVersion ?? null, petVersion: seen?.petVersion ?? null };
  const q = setQueries(db);
  const [, , set, [item]] = await writeBatch(db, [
    step(q.events, values),
    step(q.petStatus, values),
    step(q.setQuantity, values),
    step(itemQuery(db), values),
  ] as const);
  if (!item) throw notFound("Inventory entry of pet", petId);
  if (set.rowsAffected !== 1) throw new ApiError(412, "precondition_failed", "The inventory entry changed meanwhile; fetch it again.");
  return item;
}
