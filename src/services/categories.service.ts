/** Rules of categories (docs/api.md#resources): names unique case-insensitively, deletion only when no pet uses the category. */
import { and, eq, exists, notExists, type SQL, sql } from "drizzle-orm";
import { selectById, selectPage } from "../db/by-id";
import { type Database, qb } from "../db/client";
import { isConstraintError } from "../db/errors";
import { execute, guarded, outbox, params, plan, run, statement } from "../db/plan";
import { insertEvents } from "../db/events";
import { CATEGORY, type Category, type CategoryPatch, categories, type NewCategory, pets } from "../db/schema";
import { Conflict, found, StaleVersion } from "../domain/errors";
import type { Creation, KeyClaim } from "../domain/idempotency";
import { checkedVersion, type ConditionalWrite, type Precondition, refusal, requireMatch } from "../domain/precondition";
import { claimStep, claimValues, keyRowStep, recordCreated, replayUnlessClaimed } from "./idempotency.service";

export type { Category, NewCategory } from "../db/schema";

/** Uniqueness key of a name: Unicode lower case of the NFC form. */
export function nameKey(name: string): string {
  return name.normalize("NFC").toLowerCase();
}

const getQuery = selectById(categories, { ...CATEGORY.columns, version: categories.version });

const listQuery = selectPage(qb.select(CATEGORY.columns).from(categories).$dynamic(), categories.id);

/** Up to `limit` categories with id > `afterId`, ascending. One round trip. */
export async function listCategories(db: Database, afterId: number, limit: number): Promise<Category[]> {
  const rows = await execute(db, listQuery, { afterId, limit });
  return rows.map(CATEGORY.present);
}

/** The category `categoryId`: its row, representation (`current`) and version. @throws NotFound when absent. */
async function readCategory(db: Database, categoryId: number) {
  const row = found(await execute(db, getQuery, { id: categoryId }), "category", categoryId);
  return { row, current: CATEGORY.present(row), version: row.version };
}

/** @throws NotFound when absent. */
export async function getCategory(db: Database, categoryId: number): Promise<Category> {
  return (await readCategory(db, categoryId)).current;
}

const creating = params<{ name: string; nameKey: string; description: string | null; occurredAt: string }>();
/** Inserts a category when `guard` (if any) holds. */
function insertCategory(guard?: SQL) {
  return creating.prepare(
    qb
      .insert(categories)
      .select(
        qb
          .select(CATEGORY.createColumns(creating, { nameKey: sql`${creating("nameKey")}` }))
          .from(sql`(select 1)`)
          .where(guard),
      )
      .returning(CATEGORY.columns),
  );
}

/** The `category.created` event of the category just inserted (last_insert_rowid()), when the step just before changed a row. */
const categoryCreated = creating.guarded((changed) =>
  insertEvents(creating, "category.created", CATEGORY.json(), categories, and(eq(categories.id, sql`last_insert_rowid()`), changed)),
);

/** Creating a category; the event reads the row just inserted. */
const creation = plan({
  category: statement(insertCategory()),
  event: outbox(categoryCreated),
});

/** Creating with an Idempotency-Key: the claim guards the insert, the response (and its Location) is recorded with it; a taken name fails the whole batch. */
const keyedCreation = plan({
  claim: claimStep,
  category: guarded(insertCategory),
  record: recordCreated(201, categories, CATEGORY.json(), sql`'/categories/' || ${categories.id}`),
  event: outbox(categoryCreated),
  existing: keyRowStep,
});

/** Create a category. @throws Conflict `duplicate_name`. */
export async function createCategory(db: Database, input: NewCategory, now: Date): Promise<Category> {
  return (await createCategoryOnce(db, input, now)).created!;
}

/** Create a category honouring `claim` (if any): it, or the key's stored response. @throws Conflict, IdempotencyKeyInProgress, IdempotencyKeyReused. */
export async function createCategoryOnce(db: Database, input: NewCategory, now: Date, claim?: KeyClaim): Promise<Creation<Category>> {
  const values = { ...CATEGORY.values(input), nameKey: nameKey(input.name), occurredAt: now.toISOString() };
  try {
    const keyed = claim && (await run(db, keyedCreation, { ...values, ...claimValues(claim) }));
    const [inserted] = (keyed ?? (await run(db, creation, values))).category;
    if (inserted) return { created: CATEGORY.present(inserted) };
    // An insert without a guard, or with this request's claim, inserts the category, or the batch failed on the name.
    const replay = claim && keyed ? replayUnlessClaimed(keyed.claim, keyed.existing, claim) : null;
    if (!replay) throw new Error("a category creation inserted nothing");
    return { replay };
  } catch (error) {
    throw isConstraintError(error) ? new Conflict("duplicate_name", { name: input.name }) : error;
  }
}

/** Changing a category: `version` is the version read; nothing when it changed meanwhile. */
const changing = params<{ id: number; version: number; name: string; nameKey: string; description: string | null; occurredAt: string }>();
const change = plan({
  category: changing.statement(
    qb
      .update(categories)
      .set({ ...CATEGORY.assignments(changing), nameKey: sql`${changing("nameKey")}`, version: sql`${categories.version} + 1` })
      .where(and(eq(categories.id, changing("id")), eq(categories.version, changing("version"))))
      .returning(CATEGORY.columns),
  ),
  event: outbox(
    changing.guarded((changed) => insertEvents(changing, "category.updated", CATEGORY.json(), categories, and(eq(categories.id, changing("id")), changed))),
  ),
});

/** A change of category `categoryId` (`description: null` clears it), if it is as `expected` (If-Match), at `now`. */
export interface CategoryUpdate extends ConditionalWrite {
  categoryId: number;
  patch: CategoryPatch;
}

/** Change name and/or description at the version read (3 tries). @throws NotFound, Conflict `duplicate_name` | `concurrent_update`, StaleVersion. */
export async function updateCategory(db: Database, { categoryId, patch, expected, now }: CategoryUpdate): Promise<Category> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const { row, current } = await readCategory(db, categoryId);
    requireMatch(expected, "category", categoryId, current);
    const next = CATEGORY.values({ ...row, ...patch });
    try {
      const values = { ...next, nameKey: nameKey(next.name), id: categoryId, version: row.version, occurredAt: now.toISOString() };
      const [updated] = (await run(db, change, values)).category;
      if (updated) return CATEGORY.present(updated);
    } catch (error) {
      throw isConstraintError(error) ? new Conflict("duplicate_name", { name: next.name }) : error;
    }
    if (expected) throw new StaleVersion("category", categoryId);
  }
  throw new Conflict("concurrent_update", { resource: "category", id: categoryId });
}

const hasPets = qb.select({ one: sql`1` }).from(pets).where(eq(pets.categoryId, categories.id));

/** Deleting a category: `version` is NULL without If-Match. */
const removal = params<{ id: number; version: number | null; occurredAt: string }>();
/** A category that can be deleted: no pet uses it, and its version is `version` unless that is NULL (no If-Match). */
const deletable = and(
  eq(categories.id, removal("id")),
  sql`(${removal("version")} IS NULL OR ${categories.version} = ${removal("version")})`,
  notExists(hasPets),
);

/** Deleting a category: event and delete share one condition, so both happen or neither. */
const deletion = plan({
  event: outbox(removal.prepare(insertEvents(removal, "category.deleted", CATEGORY.json(), categories, deletable))),
  deleted: removal.statement(qb.delete(categories).where(deletable)),
  /** Why a delete changed nothing: the category's version, and whether pets use it (no row: absent). */
  outcome: removal.statement(
    qb
      .select({ version: categories.version, inUse: exists(hasPets).mapWith(Boolean) })
      .from(categories)
      .where(eq(categories.id, removal("id"))),
  ),
});

/** Delete a category no pet uses, if it is as `expected` (If-Match). @throws NotFound, Conflict `category_in_use`, StaleVersion. */
export async function deleteCategory(db: Database, categoryId: number, expected: Precondition | undefined, now: Date): Promise<void> {
  const version = await checkedVersion(expected, "category", categoryId, () => readCategory(db, categoryId));
  const { deleted, outcome } = await run(db, deletion, { id: categoryId, version, occurredAt: now.toISOString() });
  if (deleted.rowsAffected === 1) return;
  throw refusal("category", categoryId, outcome, (row) => row.inUse && new Conflict("category_in_use", { categoryId }));
}
