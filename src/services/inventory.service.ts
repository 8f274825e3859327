/** Inventory entries (docs/api.md#stock-and-ordering): the quantity that can still be ordered, with the pet's status. */
import { and, eq, gt, sql } from "drizzle-orm";
import { unionAll } from "drizzle-orm/sqlite-core";
import { type Database, qb } from "../db/client";
import { eventColumns, insertEventRows } from "../db/events";
import { execute, outbox, params, plan, run, statement } from "../db/plan";
import { INVENTORY_ITEM, type InventoryItem, inventory, orders, PET, pets } from "../db/schema";
import { variants } from "../db/variants";
import { found, StaleVersion } from "../domain/errors";
import type { PetStatus } from "../domain/pets";
import { type ConditionalWrite, requireMatch } from "../domain/precondition";

export interface InventoryFilter {
  status?: PetStatus;
  petIds?: number[];
}

const list = params<{ afterPetId: number; limit: number; status: PetStatus | null; petIds: string | null }>();
/** The list query per combination of filters (`status`; `petIds`, a JSON array): a page walks `pets` in id order, each entry looked up by its key. */
const listQuery = variants((byStatus: boolean, byPets: boolean) =>
  list.prepare(
    qb
      .select(INVENTORY_ITEM.columns)
      .from(pets)
      .innerJoin(inventory, eq(inventory.petId, pets.id))
      .where(
        and(
          gt(pets.id, list("afterPetId")),
          byStatus ? eq(pets.status, list("status")) : undefined,
          byPets ? sql`${pets.id} in (select value from json_each(${list("petIds")}))` : undefined,
        ),
      )
      .orderBy(pets.id)
      .limit(list("limit")),
  ),
);

/** Up to `limit` entries with petId > `afterPetId`, ascending. One round trip. */
export async function listInventory(db: Database, filter: InventoryFilter, afterPetId: number, limit: number): Promise<InventoryItem[]> {
  const query = listQuery(filter.status !== undefined, filter.petIds !== undefined);
  return execute(db, query, { afterPetId, limit, status: filter.status ?? null, petIds: filter.petIds ? JSON.stringify(filter.petIds) : null });
}

const byPet = params<{ petId: number }>();
const itemQuery = byPet.prepare(
  qb
    .select(INVENTORY_ITEM.columns)
    .from(inventory)
    .innerJoin(pets, eq(pets.id, inventory.petId))
    .where(eq(inventory.petId, byPet("petId"))),
);

/** @throws NotFound when the pet has no entry (no such pet). One round trip. */
export async function getInventoryItem(db: Database, petId: number): Promise<InventoryItem> {
  return found(await execute(db, itemQuery, { petId }), "inventory", petId);
}

/** The entry of the pet `petId` with the versions of both rows behind it. */
const versionedItemQuery = byPet.prepare(
  qb
    .select({ ...INVENTORY_ITEM.columns, inventoryVersion: inventory.version, petVersion: pets.version })
    .from(inventory)
    .innerJoin(pets, eq(pets.id, inventory.petId))
    .where(eq(inventory.petId, byPet("petId"))),
);

/** Setting a pet's stock: `inventoryVersion` and `petVersion` are the versions checked (NULL without If-Match). */
const p = params<{ petId: number; quantity: number; occurredAt: string; inventoryVersion: number | null; petVersion: number | null }>();
/** The precondition, on rows not yet written by this batch (always true without If-Match). */
const checked = sql`(${p("inventoryVersion")} is null or (
    (select ${inventory.version} from ${inventory} where ${inventory.petId} = ${p("petId")}) = ${p("inventoryVersion")}
    and (select ${pets.version} from ${pets} where ${pets.id} = ${p("petId")}) = ${p("petVersion")}))`;

/** The pet's status with the new quantity (docs/api.md#stock-and-ordering). */
const newStatus = sql<PetStatus>`(case when ${p("quantity")} > 0 then 'available'
    when exists (select 1 from ${orders} where ${orders.petId} = ${p("petId")} and ${orders.complete} = 0) then 'pending' else 'sold' end)`;

const setting = plan({
  /** The events, from the new values before the rows change: `pet.updated` (when the status changes), then `inventory.updated` (UNION ALL, in order). */
  events: outbox(
    p.prepare(
      insertEventRows(
        unionAll(
          qb
            .select(eventColumns(p, "pet.updated", PET.json({ status: newStatus })))
            .from(pets)
            .where(and(eq(pets.id, p("petId")), sql`${pets.status} <> ${newStatus}`, checked)),
          qb
            .select(eventColumns(p, "inventory.updated", INVENTORY_ITEM.json({ quantity: sql`${p("quantity")}`, status: newStatus })))
            .from(inventory)
            .where(and(eq(inventory.petId, p("petId")), checked)),
        ),
      ),
    ),
  ),
  /** The pet row is updated whenever the check holds; its version moves only when its status does. */
  pet: p.statement(
    qb
      .update(pets)
      .set({ status: newStatus, version: sql`${pets.version} + (${pets.status} <> ${newStatus})` })
      .where(and(eq(pets.id, p("petId")), checked)),
  ),
  quantity: p.guarded((changed) =>
    qb
      .update(inventory)
      .set({ quantity: sql`${p("quantity")}`, version: sql`${inventory.version} + 1` })
      .where(and(eq(inventory.petId, p("petId")), changed)),
  ),
  item: statement(itemQuery),
});

/** Pet `petId`'s new stock `quantity` (≥ 0), if its entry is as `expected` (If-Match), at `now`. */
export interface StockSetting extends ConditionalWrite {
  petId: number;
  quantity: number;
}

/** Set a pet's stock in one batch (with `expected`, the two row versions read are checked in it). @throws NotFound, StaleVersion. */
export async function setInventory(db: Database, { petId, quantity, expected, now }: StockSetting): Promise<InventoryItem> {
  let versions: { inventoryVersion: number | null; petVersion: number | null } = { inventoryVersion: null, petVersion: null };
  if (expected) {
    const { inventoryVersion, petVersion, ...item } = found(await execute(db, versionedItemQuery, { petId }), "inventory", petId);
    requireMatch(expected, "inventory", petId, item);
    versions = { inventoryVersion, petVersion };
  }
  const { quantity: set, item: rows } = await run(db, setting, { petId, quantity, occurredAt: now.toISOString(), ...versions });
  const item = found(rows, "inventory", petId);
  if (set.rowsAffected !== 1) throw new StaleVersion("inventory", petId);
  return item;
}
