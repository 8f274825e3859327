/** Creating pets (docs/api.md#stock-and-ordering): pet, inventory row, event and any Idempotency-Key claim and response in one batch. */
import { and, eq, type SQL, sql } from "drizzle-orm";
import { type Database, qb } from "../db/client";
import { guarded, outbox, params, plan, run, runEach, statement, withValues } from "../db/plan";
import { insertEvents } from "../db/events";
import { categories, inventory, type NewPet, PET, type Pet, pets } from "../db/schema";
import type { Creation, KeyClaim } from "../domain/idempotency";
import { claimStep, claimValues, keyRowStep, recordCreated, releaseStep, replayUnlessClaimed } from "./idempotency.service";
import { categoryNotFound, type PetValues } from "./pets.service";

const p = params<PetValues & { quantity: number; occurredAt: string }>();
/** Inserts the pet only when its category exists and `guard` (if any) holds. */
function insertPet(guard?: SQL) {
  return p.prepare(
    qb
      .insert(pets)
      .select(
        qb
          .select(PET.createColumns(p, { categoryId: categories.id }))
          .from(categories)
          .where(and(eq(categories.id, p("categoryId")), guard)),
      )
      .returning(PET.columns),
  );
}

/** The pet's inventory row (`quantity`), when the pet was inserted just before: last_insert_rowid() is its id. */
const insertInventory = p.guarded((changed) =>
  qb.insert(inventory).select(
    qb
      .select({ petId: pets.id, quantity: sql<number>`${p("quantity")}`.as("quantity"), version: sql<number>`1`.as("version") })
      .from(pets)
      .where(and(eq(pets.id, sql`last_insert_rowid()`), changed)),
  ),
);

/** The `pet.created` event, when the step just before changed a row; inventory.pet_id is its rowid, so last_insert_rowid() is still the pet's id. */
const petCreated = p.guarded((changed) => insertEvents(p, "pet.created", PET.json(), pets, and(eq(pets.id, sql`last_insert_rowid()`), changed)));

/** Creating a pet: nothing when its category does not exist. */
const creation = plan({ pet: statement(insertPet()), inventory: insertInventory, events: outbox(petCreated) });

/** Creating with an Idempotency-Key: the claim guards the pet; the response is recorded while last_insert_rowid() is the pet's id; a refused pet releases the claim. */
const keyedCreation = plan({
  claim: claimStep,
  pet: guarded(insertPet),
  inventory: insertInventory,
  record: recordCreated(201, pets, PET.json(), sql`'/pets/' || ${pets.id}`),
  events: outbox(petCreated),
  release: releaseStep,
  existing: keyRowStep,
});

/** The values of `creation` for `input`: quantity 1, or 0 when sold. */
function creationValues(input: NewPet, occurredAt: string) {
  const values = PET.values(input);
  return { ...values, quantity: values.status === "sold" ? 0 : 1, occurredAt };
}

/** Create a pet and its inventory row in one batch. @throws InvalidReference when the category does not exist. */
export async function createPet(db: Database, input: NewPet, now: Date): Promise<Pet> {
  return (await createPetOnce(db, input, now)).created!;
}

/** Create a pet honouring `claim` (if any): the pet, or the key's stored response. @throws InvalidReference, IdempotencyKeyInProgress, IdempotencyKeyReused. */
export async function createPetOnce(db: Database, input: NewPet, now: Date, claim?: KeyClaim): Promise<Creation<Pet>> {
  const values = creationValues(input, now.toISOString());
  const keyed = claim && (await run(db, keyedCreation, { ...values, ...claimValues(claim) }));
  const [pet] = (keyed ?? (await run(db, creation, values))).pet;
  if (pet) return { created: PET.present(pet) };
  const replay = claim && keyed ? replayUnlessClaimed(keyed.claim, keyed.existing, claim) : null;
  if (replay) return { replay };
  throw categoryNotFound(input.categoryId);
}

/** Create many pets (as `createPet`; a few hundred per call) in ONE atomic batch: the pets in input order, `null` (skipped) where the category does not exist. */
export async function createPets(db: Database, inputs: NewPet[], now: Date): Promise<(Pet | null)[]> {
  if (inputs.length === 0) return [];
  const at = now.toISOString();
  const runs = inputs.map((input) => withValues(creation, creationValues(input, at)));
  const results = await runEach(db, runs);
  return results.map(({ pet: [pet] }) => (pet ? PET.present(pet) : null));
}
