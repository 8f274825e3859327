/**
 * Rules of pets (API.md §1-§3): creation with its inventory row, replace/patch
 * with the status transition table, deletion only without orders. Every write
 * is one atomic batch carrying its events (API.md §6); updates read the current
 * state once, decide, then write guarded by what they read (at most 2 round trips).
 * Statements are Drizzle prepared queries built once per database (src/db/batch.ts).
 */
import { and, eq, gt, type SQL, sql } from "drizzle-orm";
import { type BatchStep, perDatabase, preparedVariants, step, writeBatch } from "../db/batch";
import type { Database } from "../db/client";
import { eventColumns, inventoryUpdatedWhen, petData, petUpdatedIfChanged } from "../db/events";
import { categories, events, inventory, orders, pets } from "../db/schema";
import type { PetStatus } from "../domain/pets";
import { ApiError, concurrentUpdate, notFound } from "../lib/errors";
import { assertIfMatch } from "../lib/http-cache";
import { planTransition, type TransitionPlan } from "./pet-status";

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

/** The columns of the Pet representation, typed by the schema. */
const PET_FIELDS = { id: pets.id, name: pets.name, categoryId: pets.categoryId, status: pets.status };

const ph = sql.placeholder;

/** A list with the filters that apply: one prepared variant per combination (a fixed WHERE keeps the indexes usable). */
const listQuery = preparedVariants((db: Database, byStatus: boolean, byCategory: boolean, byIds: boolean) => {
  const where: SQL[] = [gt(pets.id, ph("afterId"))];
  if (byStatus) where.push(eq(pets.status, ph("status")));
  if (byCategory) where.push(eq(pets.categoryId, ph("categoryId")));
  // The ids as one JSON array argument: one statement text whatever their number.
  if (byIds) where.push(sql`${pets.id} in (select value from json_each(${ph("ids")}))`);
  return db
    .select(PET_FIELDS)
    .from(pets)
    .where(and(...where))
    .orderBy(pets.id)
    .limit(ph("limit"))
    .prepare();
});

/** "Pet `id` may be deleted": its version matches (when one is given) and no order references it. */
function deletable(): SQL {
  return and(
    eq(pets.id, ph("id")),
    sql`(${ph("version")} is null or ${pets.version} = ${ph("version")})`,
    sql`not exists (select 1 from ${orders} where ${orders.petId} = ${pets.id})`,
  )!;
}

/** Re-checks of a status transition inside the write batch (src/services/pet-status.ts), so concurrency cannot break the rule. */
const TRANSITION_GUARDS: Record<TransitionPlan["guard"], SQL | undefined> = {
  none: undefined,
  stock_positive: sql`(select ${inventory.quantity} from ${inventory} where ${inventory.petId} = ${pets.id}) > 0`,
  no_open_orders: sql`not exists (select 1 from ${orders} where ${orders.petId} = ${pets.id} and ${orders.complete} = 0)`,
};

/** This module's prepared statements, built once per database handle. */
const queries = perDatabase((db) => {
  const updatePet = (guard: SQL | undefined) =>
    db
      .update(pets)
      .set({ name: sql`${ph("name")}`, categoryId: sql`${ph("categoryId")}`, status: sql`${ph("status")}`, version: sql`${pets.version} + 1` })
      .where(
        and(
          eq(pets.id, ph("id")),
          eq(pets.version, ph("version")),
          sql`exists (select 1 from ${categories} where ${categories.id} = ${ph("categoryId")})`,
          guard,
        ),
      )
      .returning(PET_FIELDS)
      .prepare();
  return {
    getPet: db
      .select(PET_FIELDS)
      .from(pets)
      .where(eq(pets.id, ph("id")))
      .prepare(),
    // The pet, only when its category exists (else nothing is written).
    insertPet: db
      .insert(pets)
      .select(
        db
          .select({
            id: sql<number>`NULL`.as("id"),
            name: sql<string>`${ph("name")}`.as("name"),
            categoryId: categories.id,
            status: sql<PetStatus>`${ph("status")}`.as("status"),
            version: sql<number>`1`.as("version"),
          })
          .from(categories)
          .where(eq(categories.id, ph("categoryId"))),
      )
      .returning(PET_FIELDS)
      .prepare(),
    // changes() = 1 only when the pet row above was inserted; last_insert_rowid() is its id.
    insertInventory: db
      .insert(inventory)
      .select(
        db
          .select({ petId: pets.id, quantity: sql<number>`${ph("quantity")}`.as("quantity"), version: sql<number>`1`.as("version") })
          .from(pets)
          .where(and(eq(pets.id, sql`last_insert_rowid()`), sql`changes() = 1`)),
      )
      .prepare(),
    // inventory.pet_id is its rowid, so last_insert_rowid() is still the new pet's id.
    petCreated: db
      .insert(events)
      .select(
        db
          .select(eventColumns("pet.created", petData))
          .from(pets)
          .where(and(eq(pets.id, sql`last_insert_rowid()`), sql`changes() = 1`)),
      )
      .prepare(),
    petState: db
      .select({
        ...PET_FIELDS,
        version: pets.version,
        quantity: inventory.quantity,
        openOrders: sql<number>`(select count(*) from ${orders} where ${orders.petId} = ${pets.id} and ${orders.complete} = 0)`,
        categoryExists: sql<boolean>`exists (select 1 from ${categories} where ${categories.id} = ${ph("categoryId")})`.mapWith(Boolean),
      })
      .from(pets)
      .innerJoin(inventory, eq(inventory.petId, pets.id))
      .where(eq(pets.id, ph("id")))
      .prepare(),
    updatePet: {
      none: updatePet(TRANSITION_GUARDS.none),
      stock_positive: updatePet(TRANSITION_GUARDS.stock_positive),
      no_open_orders: updatePet(TRANSITION_GUARDS.no_open_orders),
    },
    petUpdated: db
      .insert(events)
      .select(petUpdatedIfChanged(db, ph("id")))
      .prepare(),
    zeroStock: db
      .update(inventory)
      .set({ quantity: 0, version: sql`${inventory.version} + 1` })
      .where(and(eq(inventory.petId, ph("id")), sql`changes() = 1`))
      .prepare(),
    inventoryUpdated: db
      .insert(events)
      .select(inventoryUpdatedWhen(db, ph("id"), sql`changes() = 1`))
      .prepare(),
    // The event and both deletes share one condition, evaluated in one transaction: all happen or none.
    petDeleted: db
      .insert(events)
      .select(db.select(eventColumns("pet.deleted", petData)).from(pets).where(deletable()))
      .prepare(),
    deleteInventory: db.delete(inventory).where(sql`${inventory.petId} in (select ${pets.id} from ${pets} where ${deletable()})`).prepare(),
    deletePet: db.delete(pets).where(deletable()).prepare(),
    hasOrders: db
      .select({ hasOrders: sql<boolean>`exists (select 1 from ${orders} where ${orders.petId} = ${ph("id")})`.mapWith(Boolean) })
      .from(pets)
      .where(eq(pets.id, ph("id")))
      .prepare(),
  };
});

function categoryNotFound(categoryId: number): ApiError {
  return new ApiError(422, "category_not_found", `Category ${categoryId} does not exist.`, [{ path: "body.categoryId", message: "No such category." }]);
}

/** Up to `limit` pets matching `filter` with id > `afterId`, ascending. One round trip. */
export async function listPets(db: Database, filter: PetFilter, afterId: number, limit: number): Promise<Pet[]> {
  const query = listQuery(db, filter.status !== undefined, filter.categoryId !== undefined, filter.ids !== undefined);
  return query.all({ afterId, limit, status: filter.status, categoryId: filter.categoryId, ids: filter.ids && JSON.stringify(filter.ids) });
}

/** @throws ApiError 404 when absent. One round trip. */
export async function getPet(db: Database, petId: number): Promise<Pet> {
  const [pet] = await queries(db).getPet.all({ id: petId });
  if (!pet) throw notFound("Pet", petId);
  return pet;
}

/**
 * The steps that create one pet and its inventory row (quantity 1, or 0 when
 * sold) and its `pet.created` event; the first returns the pet row, or no row
 * when the category does not exist (then nothing is written).
 */
function createPetSteps(db: Database, input: NewPet, occurredAt: string) {
  const q = queries(db);
  const status = input.status ?? "available";
  return [
    step(q.insertPet, { name: input.name, categoryId: input.categoryId, status }),
    step(q.insertInventory, { quantity: status === "sold" ? 0 : 1 }),
    step(q.petCreated, { occurredAt }),
  ] as const;
}

/**
 * Create a pet and its inventory row (quantity 1, or 0 when sold) in one batch.
 * @throws ApiError 422 `category_not_found`.
 */
export async function createPet(db: Database, input: NewPet, now: Date): Promise<Pet> {
  const [[pet]] = await writeBatch(db, createPetSteps(db, input, now.toISOString()));
  if (!pet) throw categoryNotFound(input.categoryId);
  return pet;
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
  const groups = inputs.map((input) => createPetSteps(db, input, at));
  const results = await writeBatch(db, groups.flat() as BatchStep<unknown>[]);
  const perPet = groups[0]!.length;
  // Each pet's first step is its insert … returning.
  return groups.map((_, index) => (results[index * perPet] as Pet[])[0] ?? null);
}

interface PetState {
  pet: Pet;
  version: number;
  quantity: number;
  openOrders: number;
  categoryExists: boolean;
}

async function readPetState(db: Database, petId: number, categoryId: number): Promise<PetState> {
  const [row] = await queries(db).petState.all({ id: petId, categoryId });
  if (!row) throw notFound("Pet", petId);
  const { version, quantity, openOrders, categoryExists, ...pet } = row;
  return { pet, version, quantity, openOrders, categoryExists };
}

/**
 * Replace (PUT: `replace` true, missing status = available) or patch a pet.
 * Status changes follow API.md §3; `If-Match` guards against lost updates and
 * accepts the ETag of the pet or of `[pet]` (what `GET /pets?id=N` shows, the
 * successor of the deprecated item route).
 * @throws ApiError 404, 409 `invalid_transition`, 412 `precondition_failed`, 422 `category_not_found`.
 */
export async function updatePet(db: Database, petId: number, change: Partial<NewPet>, replace: boolean, ifMatch: string | undefined, now: Date): Promise<Pet> {
  const at = now.toISOString();
  const q = queries(db);
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
    const update = step(q.updatePet[plan.guard], { ...next, version: state.version });
    const event = step(q.petUpdated, { id: petId, occurredAt: at });
    const [[updated]] =
      plan.zeroStock && state.quantity !== 0
        ? await writeBatch(db, [update, event, step(q.zeroStock, { id: petId }), step(q.inventoryUpdated, { id: petId, occurredAt: at })] as const)
        : await writeBatch(db, [update, event] as const);
    if (updated) return updated;
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
  const q = queries(db);
  const condition = { id: petId, version };
  const [, , deleted, [row]] = await writeBatch(db, [
    step(q.petDeleted, { ...condition, occurredAt: now.toISOString() }),
    step(q.deleteInventory, condition),
    step(q.deletePet, condition),
    step(q.hasOrders, { id: petId }),
  ] as const);
  if (deleted.rowsAffected === 1) return;
  if (!row) throw notFound("Pet", petId);
  if (row.hasOrders) throw new ApiError(409, "pet_has_orders", `Pet ${petId} has orders and cannot be deleted.`);
  throw new ApiError(412, "precondition_failed", "The pet changed meanwhile; fetch it again.");
}
