/**
 * Rules of pets (API.md §1-§3): creation with its inventory row, replace/patch
 * with the status transition table, deletion only without orders. Every write
 * is one atomic batch carrying its events (API.md §6); updates read the current
 * state once, decide, then write guarded by what they read (at most 2 round trips).
 */
import type { InStatement, Row } from "@libsql/client";
import type { Database } from "../db/client";
import { eventInsert, INVENTORY_JSON, PET_JSON, writeStatements } from "../db/batch";
import type { PetStatus } from "../domain/pets";
import { ApiError, concurrentUpdate, notFound } from "../lib/errors";
import { assertIfMatch } from "../lib/http-cache";
import { planTransition } from "./pet-status";

/** Pet representation. */
export interface Pet {
  id: number;
  name: string;
  categoryId: number;
  status: PetStatus;
}

export interface NewPet {
  name: string;
  categoryId: number;
  status?: PetStatus;
}

export interface PetFilter {
  status?: PetStatus;
  categoryId?: number;
  ids?: number[];
}

const PET_SELECT = "SELECT id, name, category_id, status FROM pets";

function toPet(row: Row): Pet {
  return { id: Number(row.id), name: String(row.name), categoryId: Number(row.category_id), status: row.status as PetStatus };
}

function categoryNotFound(categoryId: number): ApiError {
  return new ApiError(422, "category_not_found", `Category ${categoryId} does not exist.`, [{ path: "body.categoryId", message: "No such category." }]);
}

/**
 * Up to `limit` pets matching `filter` with id > `afterId`, ascending. One round trip.
 * Reads use SQL through the client: Drizzle's query builder measured ~100 µs per
 * query to build, more than the query itself, on this hot path.
 */
export async function listPets(db: Database, filter: PetFilter, afterId: number, limit: number): Promise<Pet[]> {
  const where = ["id > ?"];
  const args: (string | number)[] = [afterId];
  if (filter.status) {
    where.push("status = ?");
    args.push(filter.status);
  }
  if (filter.categoryId !== undefined) {
    where.push("category_id = ?");
    args.push(filter.categoryId);
  }
  if (filter.ids) {
    where.push(`id IN (${filter.ids.map(() => "?").join(", ")})`);
    args.push(...filter.ids);
  }
  const rs = await db.$client.execute({ sql: `${PET_SELECT} WHERE ${where.join(" AND ")} ORDER BY id LIMIT ?`, args: [...args, limit] });
  return rs.rows.map(toPet);
}

/** @throws ApiError 404 when absent. One round trip. */
export async function getPet(db: Database, petId: number): Promise<Pet> {
  const rs = await db.$client.execute({ sql: `${PET_SELECT} WHERE id = ?`, args: [petId] });
  if (!rs.rows[0]) throw notFound("Pet", petId);
  return toPet(rs.rows[0]);
}

/**
 * The statements that create one pet and its inventory row (quantity 1, or 0
 * when sold) and its `pet.created` event; the first statement RETURNs the pet
 * row, or nothing when the category does not exist (then nothing is written).
 */
function createPetStatements(input: NewPet, at: string): InStatement[] {
  const status = input.status ?? "available";
  return [
    {
      sql: `INSERT INTO pets (name, category_id, status) SELECT ?, ?, ?
            WHERE EXISTS (SELECT 1 FROM categories WHERE id = ?) RETURNING id, name, category_id, status`,
      args: [input.name, input.categoryId, status, input.categoryId],
    },
    // changes() = 1 only when the pet row above was inserted.
    {
      sql: "INSERT INTO inventory (pet_id, quantity) SELECT last_insert_rowid(), ? WHERE changes() = 1",
      args: [status === "sold" ? 0 : 1],
    },
    // inventory.pet_id is its rowid, so last_insert_rowid() is still the new pet's id.
    eventInsert("pet.created", at, PET_JSON, "pets p WHERE p.id = last_insert_rowid() AND changes() = 1", []),
  ];
}

/**
 * Create a pet and its inventory row (quantity 1, or 0 when sold) in one batch.
 * @throws ApiError 422 `category_not_found`.
 */
export async function createPet(db: Database, input: NewPet, now: Date): Promise<Pet> {
  const [inserted] = await writeStatements(db, createPetStatements(input, now.toISOString()));
  const row = inserted!.rows[0];
  if (!row) throw categoryNotFound(input.categoryId);
  return toPet(row);
}

/**
 * Create many pets (same rules as `createPet`) in ONE atomic batch, for bulk
 * loads such as the seed script; keep `inputs` to a few hundred per call.
 * Returns the created pets in input order, `null` where the category does not
 * exist (that pet is skipped, the others are created).
 */
export async function createPets(db: Database, inputs: NewPet[], now: Date): Promise<(Pet | null)[]> {
  if (inputs.length === 0) return [];
  const at = now.toISOString();
  const groups = inputs.map((input) => createPetStatements(input, at));
  const results = await writeStatements(db, groups.flat());
  let first = 0; // index of each pet's first statement (its INSERT … RETURNING)
  return groups.map((group) => {
    const row = results[first]!.rows[0];
    first += group.length;
    return row ? toPet(row) : null;
  });
}

interface PetState {
  pet: Pet;
  version: number;
  quantity: number;
  openOrders: number;
  categoryExists: boolean;
}

async function readPetState(db: Database, petId: number, categoryId: number): Promise<PetState> {
  const rs = await db.$client.execute({
    sql: `SELECT p.id, p.name, p.category_id, p.status, p.version, i.quantity,
                 (SELECT count(*) FROM orders o WHERE o.pet_id = p.id AND o.complete = 0) AS open_orders,
                 EXISTS (SELECT 1 FROM categories WHERE id = ?) AS category_exists
          FROM pets p JOIN inventory i ON i.pet_id = p.id WHERE p.id = ?`,
    args: [categoryId, petId],
  });
  const row = rs.rows[0];
  if (!row) throw notFound("Pet", petId);
  return {
    pet: toPet(row),
    version: Number(row.version),
    quantity: Number(row.quantity),
    openOrders: Number(row.open_orders),
    categoryExists: Number(row.category_exists) === 1,
  };
}

const GUARD_SQL = {
  none: "",
  stock_positive: " AND (SELECT quantity FROM inventory WHERE pet_id = pets.id) > 0",
  no_open_orders: " AND NOT EXISTS (SELECT 1 FROM orders WHERE pet_id = pets.id AND complete = 0)",
} as const;

/**
 * Replace (PUT: `replace` true, missing status = available) or patch a pet.
 * Status changes follow API.md §3; `If-Match` guards against lost updates and
 * accepts the ETag of the pet or of `[pet]` (what `GET /pets?id=N` shows, the
 * successor of the deprecated item route).
 * @throws ApiError 404, 409 `invalid_transition`, 412 `precondition_failed`, 422 `category_not_found`.
 */
export async function updatePet(db: Database, petId: number, change: Partial<NewPet>, replace: boolean, ifMatch: string | undefined, now: Date): Promise<Pet> {
  const at = now.toISOString();
  for (let attempt = 0; attempt < 5; attempt++) {
    const state = await readPetState(db, petId, change.categoryId ?? 0);
    await assertIfMatch(ifMatch, state.pet, [[state.pet]]);
    if (change.categoryId !== undefined && change.categoryId !== state.pet.categoryId && !state.categoryExists) {
      throw categoryNotFound(change.categoryId);
    }
    const next: Pet = {
      id: petId,
      name: change.name ?? state.pet.name,
      categoryId: change.categoryId ?? state.pet.categoryId,
      status: change.status ?? (replace ? "available" : state.pet.status),
    };
    const plan = planTransition(state.pet.status, next.status, state);
    const statements: InStatement[] = [
      {
        sql: `UPDATE pets SET name = ?, category_id = ?, status = ?, version = version + 1
              WHERE id = ? AND version = ? AND EXISTS (SELECT 1 FROM categories WHERE id = ?)${GUARD_SQL[plan.guard]}
              RETURNING id, name, category_id, status`,
        args: [next.name, next.categoryId, next.status, petId, state.version, next.categoryId],
      },
      eventInsert("pet.updated", at, PET_JSON, "pets p WHERE p.id = ? AND changes() = 1", [petId]),
    ];
    if (plan.zeroStock && state.quantity !== 0) {
      statements.push(
        { sql: "UPDATE inventory SET quantity = 0, version = version + 1 WHERE pet_id = ? AND changes() = 1", args: [petId] },
        eventInsert("inventory.updated", at, INVENTORY_JSON, "inventory i JOIN pets p ON p.id = i.pet_id WHERE i.pet_id = ? AND changes() = 1", [petId]),
      );
    }
    const [updated] = await writeStatements(db, statements);
    const row = updated!.rows[0];
    if (row) return toPet(row);
    // Something changed between the read and the write: the state read is stale.
    if (ifMatch !== undefined) throw new ApiError(412, "precondition_failed", "The pet changed meanwhile; fetch it again.");
  }
  throw concurrentUpdate("Pet", petId);
}

/** Delete a pet that no order references, with its inventory row. @throws ApiError 404, 409 `pet_has_orders`, 412. */
export async function deletePet(db: Database, petId: number, ifMatch: string | undefined, now: Date): Promise<void> {
  let version: number | null = null;
  if (ifMatch !== undefined) {
    const state = await readPetState(db, petId, 0);
    await assertIfMatch(ifMatch, state.pet, [[state.pet]]);
    version = state.version;
  }
  // Event and deletes share one condition, evaluated in one transaction: all happen or none.
  const condition = "p.id = ? AND (? IS NULL OR p.version = ?) AND NOT EXISTS (SELECT 1 FROM orders WHERE pet_id = p.id)";
  const args = [petId, version, version];
  const results = await writeStatements(db, [
    eventInsert("pet.deleted", now.toISOString(), PET_JSON, `pets p WHERE ${condition}`, args),
    { sql: `DELETE FROM inventory WHERE pet_id IN (SELECT p.id FROM pets p WHERE ${condition})`, args },
    { sql: `DELETE FROM pets AS p WHERE ${condition}`, args },
    { sql: "SELECT EXISTS (SELECT 1 FROM orders WHERE pet_id = ?) AS has_orders FROM pets WHERE id = ?", args: [petId, petId] },
  ]);
  if (results[2]!.rowsAffected === 1) return;
  const row = results[3]!.rows[0];
  if (!row) throw notFound("Pet", petId);
  if (Number(row.has_orders) === 1) throw new ApiError(409, "pet_has_orders", `Pet ${petId} has orders and cannot be deleted.`);
  throw new ApiError(412, "precondition_failed", "The pet changed meanwhile; fetch it again.");
}
