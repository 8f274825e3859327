/**
 * Inventory entries (API.md §2-§3): the quantity that can still be
 * ordered, with the pet's status as the single source of truth for `status`.
 */
import type { Row } from "@libsql/client";
import type { Database } from "../db/client";
import type { PetStatus } from "../db/schema";
import { eventInsert, INVENTORY_JSON, PET_JSON, writeBatch } from "../db/batch";
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

/** SELECT list producing InventoryItem columns from `inventory i JOIN pets p`. */
export const INVENTORY_SELECT = "SELECT i.pet_id, i.quantity, p.status FROM inventory i JOIN pets p ON p.id = i.pet_id";

/** Map a row of INVENTORY_SELECT. */
export function toInventoryItem(row: Row): InventoryItem {
  return { petId: Number(row.pet_id), quantity: Number(row.quantity), status: row.status as PetStatus };
}

/** Up to `limit` entries with petId > `afterPetId`, ascending. One round trip. */
export async function listInventory(db: Database, filter: InventoryFilter, afterPetId: number, limit: number): Promise<InventoryItem[]> {
  const where = ["i.pet_id > ?"];
  const args: (string | number)[] = [afterPetId];
  if (filter.status) {
    where.push("p.status = ?");
    args.push(filter.status);
  }
  if (filter.petIds) {
    where.push(`i.pet_id IN (${filter.petIds.map(() => "?").join(", ")})`);
    args.push(...filter.petIds);
  }
  const rs = await db.$client.execute({ sql: `${INVENTORY_SELECT} WHERE ${where.join(" AND ")} ORDER BY i.pet_id LIMIT ?`, args: [...args, limit] });
  return rs.rows.map(toInventoryItem);
}

/** @throws ApiError 404 when the pet has no entry (no such pet). One round trip. */
export async function getInventoryItem(db: Database, petId: number): Promise<InventoryItem> {
  const rs = await db.$client.execute({ sql: `${INVENTORY_SELECT} WHERE i.pet_id = ?`, args: [petId] });
  if (!rs.rows[0]) throw notFound("Inventory entry of pet", petId);
  return toInventoryItem(rs.rows[0]);
}

/**
 * Set a pet's stock (API.md §3): n > 0 makes the pet available; n = 0 makes it
 * pending when it has open orders, else sold. One batch (after a read only for
 * If-Match), guarded by the inventory version that If-Match saw.
 * @throws ApiError 404, 412 `precondition_failed`.
 */
export async function setInventory(
  db: Database,
  petId: number,
  quantity: number,
  ifMatch: string | undefined,
  now: Date,
): Promise<InventoryItem> {
  const at = now.toISOString();
  // With If-Match, the versions of both rows behind the representation (quantity and pet status) seen by the check.
  let seen: { inventory: number; pet: number } | null = null;
  if (ifMatch !== undefined) {
    const rs = await db.$client.execute({
      sql: `${INVENTORY_SELECT.replace("SELECT", "SELECT i.version AS inventory_version, p.version AS pet_version,")} WHERE i.pet_id = ?`,
      args: [petId],
    });
    if (!rs.rows[0]) throw notFound("Inventory entry of pet", petId);
    await assertIfMatch(ifMatch, toInventoryItem(rs.rows[0]));
    seen = { inventory: Number(rs.rows[0].inventory_version), pet: Number(rs.rows[0].pet_version) };
  }
  const inventoryVersion = seen?.inventory ?? null;
  const petVersion = seen?.pet ?? null;
  // The inventory row is written first, guarded by both versions; the later statements
  // recognise "written by this batch" as inventory.version = seen + 1 (or always, without If-Match).
  const applied = "(? IS NULL OR (SELECT version FROM inventory WHERE pet_id = ?) = ? + 1)";
  const newStatus = `CASE WHEN ? > 0 THEN 'available'
    WHEN EXISTS (SELECT 1 FROM orders WHERE pet_id = ? AND complete = 0) THEN 'pending' ELSE 'sold' END`;
  const results = await writeBatch(db, [
    {
      sql: `UPDATE inventory SET quantity = ?, version = version + 1
            WHERE pet_id = ? AND (? IS NULL OR (version = ? AND (SELECT version FROM pets WHERE id = ?) = ?))`,
      args: [quantity, petId, inventoryVersion, inventoryVersion, petId, petVersion],
    },
    {
      sql: `UPDATE pets SET status = ${newStatus}, version = version + 1 WHERE id = ? AND status <> ${newStatus} AND ${applied}`,
      args: [quantity, petId, petId, quantity, petId, inventoryVersion, petId, inventoryVersion],
    },
    eventInsert("pet.updated", at, PET_JSON, "pets p WHERE p.id = ? AND changes() = 1", [petId]),
    eventInsert("inventory.updated", at, INVENTORY_JSON, `inventory i JOIN pets p ON p.id = i.pet_id WHERE i.pet_id = ? AND ${applied}`, [
      petId,
      inventoryVersion,
      petId,
      inventoryVersion,
    ]),
    { sql: `${INVENTORY_SELECT} WHERE i.pet_id = ?`, args: [petId] },
  ]);
  const row = results[4]!.rows[0];
  if (!row) throw notFound("Inventory entry of pet", petId);
  if (results[0]!.rowsAffected !== 1) throw new ApiError(412, "precondition_failed", "The inventory entry changed meanwhile; fetch it again.");
  return toInventoryItem(row);
}
