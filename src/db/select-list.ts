/** Select lists for Drizzle insert-selects (`qb.insert(table).select(qb.select(list).from(…))`), e.g. the outbox inserts of src/db/events.ts. */
import { type Column, is, SQL, sql } from "drizzle-orm";

/** `T` with its SQL expressions as aliased expressions (see `aliasedColumns`). */
export type AliasedColumns<T extends Record<string, SQL | Column>> = { [K in keyof T]: T[K] extends SQL<infer U> ? SQL.Aliased<U> : T[K] };

/** `fields` with every SQL expression aliased by its key (`NULL as "id"`), as Drizzle's types require in an insert-select; columns unchanged. */
export function aliasedColumns<T extends Record<string, SQL | Column>>(fields: T): AliasedColumns<T> {
  return Object.fromEntries(Object.entries(fields).map(([key, field]) => [key, is(field, SQL) ? field.as(key) : field])) as AliasedColumns<T>;
}

/** `json_object('name', value, …)` of `fields` in order: a representation as JSON built in SQL (names are the list's keys, never input). */
export function jsonObject(fields: Record<string, SQL | Column>): SQL<string> {
  const members = Object.entries(fields).map(([name, field]) => sql`${sql.raw(`'${name}'`)}, ${field}`);
  return sql<string>`json_object(${sql.join(members, sql`, `)})`;
}
