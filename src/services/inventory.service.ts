/**
 * Inventory entries (API.md §2-§3): the quantity that can still be
 * ordered, with the pet's status as the single source of truth for `status`.
 */
import type { Row } from "@libsql/client";
import type { Database } from "../db/client";
import type { PetStatus } from "../domain/pets";
import { writeStatements } from "../db/batch";
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
  // Numbered parameters, shared by the statements: ?1 petId, ?2 quantity, ?3 time, ?4/?5 the versions checked (NULL without If-Match).
  const args = [petId, quantity, now.toISOString(), seen?.inventory ?? null, seen?.pet ?? null];
  // The precondition, on rows not yet written by this batch (always true without If-Match).
  const checked = `(?4 IS NULL OR ((SELECT version FROM inventory WHERE pet_id = ?1) = ?4
    AND (SELECT version FROM pets WHERE id = ?1) = ?5))`;
  const newStatus = `(CASE WHEN ?2 > 0 THEN 'available'
    WHEN EXISTS (SELECT 1 FROM orders WHERE pet_id = ?1 AND complete = 0) THEN 'pending' ELSE 'sold' END)`;
  const results = await writeStatements(db, [
    {
      sql: `INSERT INTO events (type, occurred_at, data)
            SELECT 'pet.updated', ?3, json_object('id', p.id, 'name', p.name, 'categoryId', p.category_id, 'status', ${newStatus})
            FROM pets p WHERE p.id = ?1 AND p.status <> ${newStatus} AND ${checked}`,
      args,
    },
    {
      sql: `INSERT INTO events (type, occurred_at, data)
            SELECT 'inventory.updated', ?3, json_object('petId', i.pet_id, 'quantity', ?2, 'status', ${newStatus})
            FROM inventory i WHERE i.pet_id = ?1 AND ${checked}`,
      args,
    },
    {
      sql: `UPDATE pets SET status = ${newStatus}, version = version + (status <> ${newStatus}) WHERE id = ?1 AND ${checked}`,
      args,
    },
    { sql: "UPDATE inventory SET quantity = ?2, version = version + 1 WHERE pet_id = ?1 AND changes() = 1", args: args.slice(0, 2) },
    { sql: `${INVENTORY_SELECT} WHERE i.pet_id = ?`, args: [petId] },
  ]);
  const row = results[4]!.rows[0];
  if (!row) throw notFound("Inventory entry of pet", petId);
  if (results[3]!.rowsAffected !== 1) throw new ApiError(412, "precondition_failed", "The inventory entry changed meanwhile; fetch it again.");
  return toInventoryItem(row);
}
