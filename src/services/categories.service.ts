/**
 * Rules of categories (API.md §1-§3): case-insensitively unique names,
 * deletion only when no pet references the category. Each write is one batch
 * that also appends its event (API.md §6).
 */
import { and, eq, exists, gt, notExists, sql } from "drizzle-orm";
import { type Database, qb } from "../db/client";
import { isConstraintError } from "../db/errors";
import { categoryData, eventColumns, outboxRow } from "../db/events";
import { execute, guarded, outbox, plan, run, statement } from "../db/plan";
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

/** The category (placeholder `id`) with its version. */
const getQuery = qb
  .select({ ...CATEGORY, version: categories.version })
  .from(categories)
  .where(eq(categories.id, sql.placeholder("id")))
  .prepare();

function toCategory(row: { id: number; name: string; description: string | null }): Category {
  const out: Category = { id: row.id, name: row.name };
  if (row.description !== null) out.description = row.description;
  return out;
}

function duplicateName(name: string): ApiError {
  return new ApiError(409, "duplicate_name", `A category named "${name}" already exists.`);
}

const listQuery = qb
  .select(CATEGORY)
  .from(categories)
  .where(gt(categories.id, sql.placeholder("afterId")))
  .orderBy(categories.id)
  .limit(sql.placeholder("limit"))
  .prepare();

/** Up to `limit` categories with id > `afterId`, ascending. One round trip. */
export async function listCategories(db: Database, afterId: number, limit: number): Promise<Category[]> {
  const rows = await execute(db, listQuery, { afterId, limit });
  return rows.map(toCategory);
}

/** @throws ApiError 404 when absent. */
export async function getCategory(db: Database, categoryId: number): Promise<Category> {
  const [row] = await execute(db, getQuery, { id: categoryId });
  if (!row) throw notFound("Category", categoryId);
  return toCategory(row);
}

/** Creating a category (placeholders `name`, `nameKey`, `description`, `occurredAt`); the event reads the row just inserted. */
const creation = plan({
  category: statement(
    qb
      .insert(categories)
      .values({ name: sql.placeholder("name"), nameKey: sql.placeholder("nameKey"), description: sql.placeholder("description") })
      .returning(CATEGORY)
      .prepare(),
  ),
  event: outbox(
    qb
      .insert(events)
      .select(qb.select(eventColumns("category.created", categoryData)).from(categories).where(eq(categories.id, sql`last_insert_rowid()`)))
      .returning(outboxRow)
      .prepare(),
  ),
});

/** Create a category. @throws ApiError 409 `duplicate_name`. */
export async function createCategory(db: Database, input: NewCategory, now: Date): Promise<Category> {
  try {
    const values = { name: input.name, nameKey: nameKey(input.name), description: input.description ?? null, occurredAt: now.toISOString() };
    const {
      category: [inserted],
    } = await run(db, creation, values);
    return toCategory(inserted!);
  } catch (error) {
    if (isConstraintError(error)) throw duplicateName(input.name);
    throw error;
  }
}

/** Changing a category (placeholders `id`, `version` (read), `name`, `nameKey`, `description`, `occurredAt`): nothing when it changed meanwhile. */
const change = plan({
  category: statement(
    qb
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
  ),
  event: outbox(
    guarded((changed) =>
      qb
        .insert(events)
        .select(
          qb
            .select(eventColumns("category.updated", categoryData))
            .from(categories)
            .where(and(eq(categories.id, sql.placeholder("id")), changed)),
        )
        .returning(outboxRow)
        .prepare(),
    ).after("category"),
  ),
});

/** A change of category `categoryId` (`description: null` clears it), with If-Match (if any), at `now`. */
export interface CategoryUpdate {
  categoryId: number;
  patch: { name?: string; description?: string | null };
  ifMatch?: string;
  now: Date;
}

/**
 * Change name and/or description; `null` description clears it.
 * Guarded by the version read, so a concurrent change makes it retry.
 * @throws ApiError 404, 409 `duplicate_name`, 412 `precondition_failed`.
 */
export async function updateCategory(db: Database, { categoryId, patch, ifMatch, now }: CategoryUpdate): Promise<Category> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const [row] = await execute(db, getQuery, { id: categoryId });
    if (!row) throw notFound("Category", categoryId);
    await assertIfMatch(ifMatch, toCategory(row));
    const name = patch.name ?? row.name;
    const description = patch.description === undefined ? row.description : patch.description;
    try {
      const values = { name, nameKey: nameKey(name), description, id: categoryId, version: row.version, occurredAt: now.toISOString() };
      const {
        category: [updated],
      } = await run(db, change, values);
      if (updated) return toCategory(updated);
    } catch (error) {
      if (isConstraintError(error)) throw duplicateName(name);
      throw error;
    }
    if (ifMatch !== undefined) throw new ApiError(412, "precondition_failed", "The category changed meanwhile; fetch it again.");
  }
  throw concurrentUpdate("Category", categoryId);
}

const hasPets = qb.select({ one: sql`1` }).from(pets).where(eq(pets.categoryId, categories.id));

/** A category that can be deleted (placeholders `id`, `version`): no pet uses it, and its version is `version` unless that is NULL (no If-Match). */
const deletable = and(
  eq(categories.id, sql.placeholder("id")),
  sql`(${sql.placeholder("version")} IS NULL OR ${categories.version} = ${sql.placeholder("version")})`,
  notExists(hasPets),
);

/** Deleting a category (placeholders `id`, `version`, `occurredAt`): event and delete share one condition, so both happen or neither. */
const deletion = plan({
  event: outbox(
    qb
      .insert(events)
      .select(qb.select(eventColumns("category.deleted", categoryData)).from(categories).where(deletable))
      .returning(outboxRow)
      .prepare(),
  ),
  deleted: statement(qb.delete(categories).where(deletable).prepare()),
  /** Why a delete changed nothing: the category's version, and whether pets use it (no row: absent). */
  outcome: statement(
    qb
      .select({ version: categories.version, inUse: exists(hasPets).mapWith(Boolean) })
      .from(categories)
      .where(eq(categories.id, sql.placeholder("id")))
      .prepare(),
  ),
});

/** Delete a category no pet uses. @throws ApiError 404, 409 `category_in_use`, 412. */
export async function deleteCategory(db: Database, categoryId: number, ifMatch: string | undefined, now: Date): Promise<void> {
  let version: number | null = null;
  if (ifMatch !== undefined) {
    const [row] = await execute(db, getQuery, { id: categoryId });
    if (!row) throw notFound("Category", categoryId);
    await assertIfMatch(ifMatch, toCategory(row));
    version = row.version;
  }
  const { deleted, outcome } = await run(db, deletion, { id: categoryId, version, occurredAt: now.toISOString() });
  if (deleted.rowsAffected === 1) return;
  const [row] = outcome;
  if (!row) throw notFound("Category", categoryId);
  if (row.inUse) {
    throw new ApiError(409, "category_in_use", `Category ${categoryId} still has pets; move or delete them first.`);
  }
  throw new ApiError(412, "precondition_failed", "The category changed meanwhile; fetch it again.");
}
