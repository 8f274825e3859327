/**
 * Rules of categories (API.md §1-§3): case-insensitively unique names,
 * deletion only when no pet references the category. Each write is one batch
 * that also appends its event (API.md §6).
 */
import type { Row } from "@libsql/client";
import type { Database } from "../db/client";
import { CATEGORY_JSON, eventInsert, isConstraintError, readStatements, writeStatements } from "../db/batch";
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

function toCategory(row: Row): Category {
  const out: Category = { id: Number(row.id), name: String(row.name) };
  if (row.description !== null && row.description !== undefined) out.description = String(row.description);
  return out;
}

function duplicateName(name: string): ApiError {
  return new ApiError(409, "duplicate_name", `A category named "${name}" already exists.`);
}

/** Up to `limit` categories with id > `afterId`, ascending. One round trip. */
export async function listCategories(db: Database, afterId: number, limit: number): Promise<Category[]> {
  const [rs] = await readStatements(db, [{ sql: "SELECT id, name, description FROM categories WHERE id > ? ORDER BY id LIMIT ?", args: [afterId, limit] }]);
  return rs!.rows.map(toCategory);
}

/** @throws ApiError 404 when absent. */
export async function getCategory(db: Database, categoryId: number): Promise<Category> {
  const rs = await db.$client.execute({ sql: "SELECT id, name, description FROM categories WHERE id = ?", args: [categoryId] });
  if (!rs.rows[0]) throw notFound("Category", categoryId);
  return toCategory(rs.rows[0]);
}

/** Create a category. @throws ApiError 409 `duplicate_name`. */
export async function createCategory(db: Database, input: NewCategory, now: Date): Promise<Category> {
  try {
    const [inserted] = await writeStatements(db, [
      {
        sql: "INSERT INTO categories (name, name_key, description) VALUES (?, ?, ?) RETURNING id, name, description",
        args: [input.name, nameKey(input.name), input.description ?? null],
      },
      eventInsert("category.created", now.toISOString(), CATEGORY_JSON, "categories c WHERE c.id = last_insert_rowid()", []),
    ]);
    return toCategory(inserted!.rows[0]!);
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
    const rs = await db.$client.execute({
      sql: "SELECT id, name, description, version FROM categories WHERE id = ?",
      args: [categoryId],
    });
    const row = rs.rows[0];
    if (!row) throw notFound("Category", categoryId);
    await assertIfMatch(ifMatch, toCategory(row));
    const name = patch.name ?? String(row.name);
    const description = patch.description === undefined ? row.description : patch.description;
    try {
      const [updated] = await writeStatements(db, [
        {
          sql: `UPDATE categories SET name = ?, name_key = ?, description = ?, version = version + 1
                WHERE id = ? AND version = ? RETURNING id, name, description`,
          args: [name, nameKey(name), description ?? null, categoryId, Number(row.version)],
        },
        eventInsert("category.updated", now.toISOString(), CATEGORY_JSON, "categories c WHERE c.id = ? AND changes() = 1", [categoryId]),
      ]);
      if (updated!.rows[0]) return toCategory(updated!.rows[0]);
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
  let version: number | null = null;
  if (ifMatch !== undefined) {
    const rs = await db.$client.execute({
      sql: "SELECT id, name, description, version FROM categories WHERE id = ?",
      args: [categoryId],
    });
    if (!rs.rows[0]) throw notFound("Category", categoryId);
    await assertIfMatch(ifMatch, toCategory(rs.rows[0]));
    version = Number(rs.rows[0].version);
  }
  // Event and delete share one condition, evaluated in the same transaction: both happen or neither.
  const condition = "c.id = ? AND (? IS NULL OR c.version = ?) AND NOT EXISTS (SELECT 1 FROM pets WHERE category_id = c.id)";
  const args = [categoryId, version, version];
  const results = await writeStatements(db, [
    eventInsert("category.deleted", now.toISOString(), CATEGORY_JSON, `categories c WHERE ${condition}`, args),
    { sql: `DELETE FROM categories AS c WHERE ${condition}`, args },
    { sql: "SELECT version, EXISTS (SELECT 1 FROM pets WHERE category_id = ?) AS in_use FROM categories WHERE id = ?", args: [categoryId, categoryId] },
  ]);
  if (results[1]!.rowsAffected === 1) return;
  const row = results[2]!.rows[0];
  if (!row) throw notFound("Category", categoryId);
  if (Number(row.in_use) === 1) {
    throw new ApiError(409, "category_in_use", `Category ${categoryId} still has pets; move or delete them first.`);
  }
  throw new ApiError(412, "precondition_failed", "The category changed meanwhile; fetch it again.");
}
