/**
 * Rules of categories (API.md §1-§3): case-insensitively unique names,
 * deletion only when no pet references the category. Each write is one batch
 * that also appends its event (API.md §6).
 */
import { and, eq, exists, gt, notExists, sql } from "drizzle-orm";
import type { Database } from "../db/client";
import { isConstraintError, perDatabase, step, writeBatch } from "../db/batch";
import { categoryData, eventColumns } from "../db/events";
import { categories, events, pets } from "../db/schema";
import { ApiError, concurrentUpdate, notFound } from "../lib/errors";
import { assertIfMatch } from "../lib/http-cache";

/** Category representation (`description` absent when not set). */
export interface Category {
  id: number;
  name: string;
  description?: string;
}

export interface NewCategory {
  name: string;
  description?: string;
}

/** Uniqueness key of a name: Unicode lower case of the NFC form. */
export function nameKey(name: string): string {
  return name.normalize("NFC").toLowerCase();
}

/** The columns of the Category representation. */
const CATEGORY = { id: categories.id, name: categories.name, description: categories.description };

/** The statements of this module, prepared once per database. */
const queries = perDatabase((db) => {
  const hasPets = db.select({ one: sql`1` }).from(pets).where(eq(pets.categoryId, categories.id));
  /** A category that can be deleted: no pet uses it, and its version is `version` unless that is NULL (no If-Match). */
  const deletable = and(
    eq(categories.id, sql.placeholder("id")),
    sql`(${sql.placeholder("version")} IS NULL OR ${categories.version} = ${sql.placeholder("version")})`,
    notExists(hasPets),
  );
  return {
    list: db
      .select(CATEGORY)
      .from(categories)
      .where(gt(categories.id, sql.placeholder("afterId")))
      .orderBy(categories.id)
      .limit(sql.placeholder("limit"))
      .prepare(),
    get: db
      .select({ ...CATEGORY, version: categories.version })
      .from(categories)
      .where(eq(categories.id, sql.placeholder("id")))
      .prepare(),
    insert: db
      .insert(categories)
      .values({ name: sql.placeholder("name"), nameKey: sql.placeholder("nameKey"), description: sql.placeholder("description") })
      .returning(CATEGORY)
      .prepare(),
    createdEvent: db
      .insert(events)
      .select(db.select(eventColumns("category.created", categoryData)).from(categories).where(eq(categories.id, sql`last_insert_rowid()`)))
      .prepare(),
    /** Guarded by the version read: changes nothing when the category changed meanwhile. */
    update: db
      .update(categories)
      .set({
        name: sql`${sql.placeholder("name")}`,
        nameKey: sql`${sql.placeholder("nameKey")}`,
        description: sql`${sql.placeholder("description")}`,
        version: sql`${categories.version} + 1`,
      })
      .where(and(eq(categories.id, sql.placeholder("id")), eq(categories.version, sql.placeholder("version"))))
      .returning(CATEGORY)
      .prepare(),
    updatedEvent: db
      .insert(events)
      .select(
        db
          .select(eventColumns("category.updated", categoryData))
          .from(categories)
          .where(and(eq(categories.id, sql.placeholder("id")), sql`changes() = 1`)),
      )
      .prepare(),
    // Event and delete share one condition, evaluated in the same transaction: both happen or neither.
    deletedEvent: db
      .insert(events)
      .select(db.select(eventColumns("category.deleted", categoryData)).from(categories).where(deletable))
      .prepare(),
    delete: db.delete(categories).where(deletable).prepare(),
    /** Why a delete changed nothing: the category's version, and whether pets use it (no row: absent). */
    deleteOutcome: db
      .select({ version: categories.version, inUse: exists(hasPets).mapWith(Boolean) })
      .from(categories)
      .where(eq(categories.id, sql.placeholder("id")))
      .prepare(),
  };
});

function toCategory(row: { id: number; name: string; description: string | null }): Category {
  const out: Category = { id: row.id, name: row.name };
  if (row.description !== null) out.description = row.description;
  return out;
}

function duplicateName(name: string): ApiError {
  return new ApiError(409, "duplicate_name", `A category named "${name}" already exists.`);
}

/** Up to `limit` categories with id > `afterId`, ascending. One round trip. */
export async function listCategories(db: Database, afterId: number, limit: number): Promise<Category[]> {
  const rows = await queries(db).list.all({ afterId, limit });
  return rows.map(toCategory);
}

/** @throws ApiError 404 when absent. */
export async function getCategory(db: Database, categoryId: number): Promise<Category> {
  const row = await queries(db).get.get({ id: categoryId });
  if (!row) throw notFound("Category", categoryId);
  return toCategory(row);
}

/** Create a category. @throws ApiError 409 `duplicate_name`. */
export async function createCategory(db: Database, input: NewCategory, now: Date): Promise<Category> {
  try {
    const q = queries(db);
    const [inserted] = await writeBatch(db, [
      step(q.insert, { name: input.name, nameKey: nameKey(input.name), description: input.description ?? null }),
      step(q.createdEvent, { occurredAt: now.toISOString() }),
    ] as const);
    return toCategory(inserted[0]!);
  } catch (error) {
    if (isConstraintError(error)) throw duplicateName(input.name);
    throw error;
  }
}

/**
 * Change name and/or description; `null` description clears it.
 * Guarded by the version read, so a concurrent change makes it retry.
 * @throws ApiError 404, 409 `duplicate_name`, 412 `precondition_failed`.
 */
export async function updateCategory(
  db: Database,
  categoryId: number,
  patch: { name?: string; description?: string | null },
  ifMatch: string | undefined,
  now: Date,
): Promise<Category> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const q = queries(db);
    const row = await q.get.get({ id: categoryId });
    if (!row) throw notFound("Category", categoryId);
    await assertIfMatch(ifMatch, toCategory(row));
    const name = patch.name ?? row.name;
    const description = patch.description === undefined ? row.description : patch.description;
    try {
      const [[updated]] = await writeBatch(db, [
        step(q.update, { name, nameKey: nameKey(name), description, id: categoryId, version: row.version }),
        step(q.updatedEvent, { occurredAt: now.toISOString(), id: categoryId }),
      ] as const);
      if (updated) return toCategory(updated);
    } catch (error) {
      if (isConstraintError(error)) throw duplicateName(name);
      throw error;
    }
    if (ifMatch !== undefined) throw new ApiError(412, "precondition_failed", "The category changed meanwhile; fetch it again.");
  }
  throw concurrentUpdate("Category", categoryId);
}

/** Delete a category no pet uses. @throws ApiError 404, 409 `category_in_use`, 412. */
export async function deleteCategory(db: Database, categoryId: number, ifMatch: string | undefined, now: Date): Promise<void> {
  const q = queries(db);
  let version: number | null = null;
  if (ifMatch !== undefined) {
    const row = await q.get.get({ id: categoryId });
    if (!row) throw notFound("Category", categoryId);
    await assertIfMatch(ifMatch, toCategory(row));
    version = row.version;
  }
  const guard = { id: categoryId, version };
  const [, deleted, [row]] = await writeBatch(db, [
    step(q.deletedEvent, { occurredAt: now.toISOString(), ...guard }),
    step(q.delete, guard),
    step(q.deleteOutcome, { id: categoryId }),
  ] as const);
  if (deleted.rowsAffected === 1) return;
  if (!row) throw notFound("Category", categoryId);
  if (row.inUse) {
    throw new ApiError(409, "category_in_use", `Category ${categoryId} still has pets; move or delete them first.`);
  }
  throw new ApiError(412, "precondition_failed", "The category changed meanwhile; fetch it again.");
}
