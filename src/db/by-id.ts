/** The reads by `id` that most resources prepare: one row by its id, and a keyset page in id order. */
import { eq, gt } from "drizzle-orm";
import type { SelectedFields, SQLiteColumn, SQLiteSelect, SQLiteTable } from "drizzle-orm/sqlite-core";
import { qb } from "./client";
import { params } from "./plan";

const byId = params<{ id: number }>();
const page = params<{ afterId: number; limit: number }>();

/** `SELECT fields FROM table WHERE id = :id`, prepared; build it once per process. */
export function selectById<F extends SelectedFields>(table: SQLiteTable & { id: SQLiteColumn }, fields: F) {
  return byId.prepare(
    qb
      .select(fields)
      .from(table)
      .where(eq(table.id, byId("id"))),
  );
}

/** `select` (`$dynamic()`) `WHERE id > :afterId ORDER BY id LIMIT :limit`, prepared: the page after id `afterId`; build it once per process. */
export function selectPage<T extends SQLiteSelect>(select: T, id: SQLiteColumn) {
  return page.prepare(
    select
      .where(gt(id, page("afterId")))
      .orderBy(id)
      .limit(page("limit")),
  );
}
