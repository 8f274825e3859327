/** Named values of a `params<V>()` statement as SQL: the `set` of an update, or the select list of an insert-select. */
import { type SQL, sql } from "drizzle-orm";
import { toSnakeCase } from "drizzle-orm/casing";
import type { Params } from "./plan";

/** `{key: placeholder}` for each of `keys`, in order (an update's `set`). */
export function placeholders<V, const K extends keyof V & string>(p: Params<V>, keys: readonly K[]): { [k in K]: SQL<V[k]> } {
  return Object.fromEntries(keys.map((key) => [key, sql`${p(key)}`])) as { [k in K]: SQL<V[k]> };
}

/** `placeholders` each aliased by its snake_case column name (`? as "event_id"`), in order: part of an insert-select list. */
export function aliasedPlaceholders<V, const K extends keyof V & string>(p: Params<V>, keys: readonly K[]): { [k in K]: SQL.Aliased<V[k]> } {
  return Object.fromEntries(keys.map((key) => [key, sql`${p(key)}`.as(toSnakeCase(key))])) as { [k in K]: SQL.Aliased<V[k]> };
}
