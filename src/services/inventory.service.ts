/**
 * Reads of inventory entries (API.md §2-§3): the quantity that can still be
 * ordered, with the pet's status as the single source of truth for `status`.
 */
import type { Row } from "@libsql/client";
import type { Database } from "../db/client";
import type { PetStatus } from "../db/schema";
import { notFound } from "../lib/errors";

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
