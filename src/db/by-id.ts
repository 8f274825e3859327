/** The read of one row by its `id`, which most resources prepare. */
import { eq } from "drizzle-orm";
import type { SelectedFields, SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import { qb } from "./client";
import { params } from "./plan";

const byId = params<{ id: number }>();

/** `SELECT fields FROM table WHERE id = :id`, prepared; build it once per process. */
export function selectById<F extends SelectedFields>(table: SQLiteTable & { id: SQLiteColumn }, fields: F) {
  return byId.prepare(
    qb
      .select(fields)
      .from(table)
      .where(eq(table.id, byId("id"))),
  );
}
