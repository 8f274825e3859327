/** Rules of pets (docs/api.md#stock-and-ordering): replace and patch with the status transitions, deletion only without orders. */
import { and, eq, gt, type SQL, sql } from "drizzle-orm";
import { selectById } from "../db/by-id";
import { type Database, qb } from "../db/client";
import { insertEventRows, insertEvents, inventoryUpdatedWhen, petUpdatedIfChanged } from "../db/events";
import { execute, outbox, params, plan, run } from "../db/plan";
import { categories, inventory, type NewPet, orders, PET, type Pet, type PetPatch, pets } from "../db/schema";
import type { Values } from "../db/representation";
import { variants } from "../db/variants";
import { Conflict, found, InvalidReference, StaleVersion } from "../domain/errors";
import type { PetStatus } from "../domain/pets";
import { checkedVersion, type ConditionalWrite, type Precondition, refusal, requireMatch } from "../domain/precondition";
import { planTransition, type TransitionPlan } from "./pet-status";

export type { NewPet, Pet } from "../db/schema";

/** The values of creating or updating a pet: its own columns (src/db/representation.ts `Values`). */
export type PetValues = Values<typeof PET>;

export interface PetFilter {
  status?: PetStatus;
  categoryId?: number;
  ids?: number[];
}

const list = params<{ afterId: number; limit: number; status: PetStatus | undefined; categoryId: number | undefined; ids: string | undefined }>();
/** A list with the filters that apply: one prepared variant per combination (a fixed WHERE keeps the indexes usable). */
const listQuery = variants((byStatus: boolean, byCategory: boolean, byIds: boolean) => {
  const where: SQL[] = [gt(pets.id, list("afterId"))];
  if (byStatus) where.push(eq(pets.status, list("status")));
  if (byCategory) where.push(eq(pets.categoryId, list("categoryId")));
  if (byIds) where.push(sql`${pets.id} in (select value from json_each(${list("ids")}))`);
  return list.prepare(
    qb
      .select(PET.columns)
      .from(pets)
      .where(and(...where))
      .orderBy(pets.id)
      .limit(list("limit")),
  );
});

/** The input's `categoryId` names no category. */
export function categoryNotFound(categoryId: number): InvalidReference {
  return new InvalidReference("category", categoryId, "categoryId");
}

/** Up to `limit` pets matching `filter` with id > `afterId`, ascending. One round trip. */
export async function listPets(db: Database, { status, categoryId, ids }: PetFilter, afterId: number, limit: number): Promise<Pet[]> {
  const query = listQuery(status !== undefined, categoryId !== undefined, ids !== undefined);
  const rows = await execute(db, query, { afterId, limit, status, categoryId, ids: ids && JSON.stringify(ids) });
  return rows.map(PET.present);
}

const getQuery = selectById(pets, PET.columns);

/** @throws NotFound when absent. One round trip. */
export async function getPet(db: Database, petId: number): Promise<Pet> {
  return PET.present(found(await execute(db, getQuery, { id: petId }), "pet", petId));
}

const state = params<{ id: number; categoryId: number }>();
/** The pet `id` with what a status change depends on, and whether category `categoryId` exists. */
const stateQuery = state.prepare(
  qb
    .select({
      ...PET.columns,
      version: pets.version,
      quantity: inventory.quantity,
      openOrders: sql<number>`(select count(*) from ${orders} where ${orders.petId} = ${pets.id} and ${orders.complete} = 0)`,
      categoryExists: sql<boolean>`exists (select 1 from ${categories} where ${categories.id} = ${state("categoryId")})`.mapWith(Boolean),
    })
    .from(pets)
    .innerJoin(inventory, eq(inventory.petId, pets.id))
    .where(eq(pets.id, state("id"))),
);

/** The pet `petId` with its version and stock state, and whether category `categoryId` exists. @throws NotFound when absent. */
async function readPetState(db: Database, petId: number, categoryId: number) {
  const { version, quantity, openOrders, categoryExists, ...pet } = found(await execute(db, stateQuery, { id: petId, categoryId }), "pet", petId);
  return { pet: PET.present(pet), version, quantity, openOrders, categoryExists };
}

/** Updating a pet: `version` is the version read. */
const change = params<PetValues & { id: number; version: number; occurredAt: string }>();
/** The `pet.updated` event, when the update just before changed the pet. */
const petUpdated = outbox(change.guarded((changed) => insertEventRows(petUpdatedIfChanged(change, change("id"), changed))));

/** Selling empties the stock, when the pet was updated (its event inserted). */
const zeroStock = change.guarded((changed) =>
  qb
    .update(inventory)
    .set({ quantity: 0, version: sql`${inventory.version} + 1` })
    .where(and(eq(inventory.petId, change("id")), changed)),
);

/** The `inventory.updated` event, when the stock was emptied. */
const inventoryUpdated = outbox(change.guarded((changed) => insertEventRows(inventoryUpdatedWhen(change, change("id"), changed))));

/** Updating a pet, re-checking its transition's guard; `zeroing` also empties its stock (sold). */
function updatePlans(guard: SQL | undefined) {
  const update = change.statement(
    qb
      .update(pets)
      .set({ ...PET.assignments(change), version: sql`${pets.version} + 1` })
      .where(
        and(
          eq(pets.id, change("id")),
          eq(pets.version, change("version")),
          sql`exists (select 1 from ${categories} where ${categories.id} = ${change("categoryId")})`,
          guard,
        ),
      )
      .returning(PET.columns),
  );
  return {
    plain: plan({ update, event: petUpdated }),
    zeroing: plan({ update, event: petUpdated, stock: zeroStock, stockEvent: inventoryUpdated }),
  };
}

/** The update plans per transition guard (src/services/pet-status.ts), so concurrency cannot break the rule. */
const UPDATES: Record<TransitionPlan["guard"], ReturnType<typeof updatePlans>> = {
  none: updatePlans(undefined),
  stock_positive: updatePlans(sql`(select ${inventory.quantity} from ${inventory} where ${inventory.petId} = ${pets.id}) > 0`),
  no_open_orders: updatePlans(sql`not exists (select 1 from ${orders} where ${orders.petId} = ${pets.id} and ${orders.complete} = 0)`),
};

/** A change of pet `petId`: `replace` (PUT: a missing status means available) or patch, if it is as `expected` (If-Match), at `now`. */
export interface PetUpdate extends ConditionalWrite {
  petId: number;
  change: NewPet | PetPatch;
  replace: boolean;
}

/** Replace or patch a pet; `expected` may hold for the pet or `[pet]`. @throws NotFound, Conflict, StaleVersion, InvalidReference (category). */
export async function updatePet(db: Database, { petId, change, replace, expected, now }: PetUpdate): Promise<Pet> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const state = await readPetState(db, petId, change.categoryId ?? 0);
    requireMatch(expected, "pet", petId, state.pet, [[state.pet]]);
    if (change.categoryId !== undefined && change.categoryId !== state.pet.categoryId && !state.categoryExists) {
      throw categoryNotFound(change.categoryId);
    }
    // PUT: what the body leaves out takes its default or is absent; PATCH: it keeps its value.
    const next = PET.values(replace ? change : { ...state.pet, ...change });
    const transition = planTransition(state.pet.status, next.status, state);
    const plans = UPDATES[transition.guard];
    const values = { ...next, id: petId, version: state.version, occurredAt: now.toISOString() };
    const { update } = transition.zeroStock && state.quantity !== 0 ? await run(db, plans.zeroing, values) : await run(db, plans.plain, values);
    const [updated] = update;
    if (updated) return PET.present(updated);
    if (expected) throw new StaleVersion("pet", petId);
  }
  throw new Conflict("concurrent_update", { resource: "pet", id: petId });
}

/** Deleting a pet: `version` is NULL without If-Match. */
const removal = params<{ id: number; version: number | null; occurredAt: string }>();
/** "Pet `id` may be deleted": its version matches (when one is given) and no order references it. */
const deletable = and(
  eq(pets.id, removal("id")),
  sql`(${removal("version")} is null or ${pets.version} = ${removal("version")})`,
  sql`not exists (select 1 from ${orders} where ${orders.petId} = ${pets.id})`,
)!;

/** Deleting a pet: the event and both deletes share one condition, so all happen or none. */
const deletion = plan({
  event: outbox(removal.prepare(insertEvents(removal, "pet.deleted", PET.json(), pets, deletable))),
  inventory: removal.statement(qb.delete(inventory).where(sql`${inventory.petId} in (select ${pets.id} from ${pets} where ${deletable})`)),
  pet: removal.statement(qb.delete(pets).where(deletable)),
  hasOrders: removal.statement(
    qb
      .select({ hasOrders: sql<boolean>`exists (select 1 from ${orders} where ${orders.petId} = ${removal("id")})`.mapWith(Boolean) })
      .from(pets)
      .where(eq(pets.id, removal("id"))),
  ),
});

/** Delete a pet no order references, with its inventory row, if as `expected`. @throws NotFound, Conflict `pet_has_orders`, StaleVersion. */
export async function deletePet(db: Database, petId: number, expected: Precondition | undefined, now: Date): Promise<void> {
  const read = () => readPetState(db, petId, 0).then(({ pet, version }) => ({ current: pet, alsoCurrent: [[pet]], version }));
  const version = await checkedVersion(expected, "pet", petId, read);
  const { pet: deleted, hasOrders } = await run(db, deletion, { id: petId, version, occurredAt: now.toISOString() });
  if (deleted.rowsAffected === 1) return;
  throw refusal("pet", petId, hasOrders, (row) => row.hasOrders && new Conflict("pet_has_orders", { petId }));
}
