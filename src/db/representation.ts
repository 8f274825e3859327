/** A resource's representation, declared once beside its table (docs/architecture.md#adding-a-field): NOT NULL members first, others absent while NULL. */
import { type Column, getTableColumns, getTableName, type Placeholder, type SQL, sql } from "drizzle-orm";
import type { SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import { aliasedColumns, jsonObject } from "./select-list";

type Columns = Record<string, SQLiteColumn>;
type Flat<T> = { [K in keyof T]: T[K] } & {};
type Data<C> = C extends Column ? C["_"]["data"] : never;
type NotNull<F> = { [K in keyof F]: F[K] extends { _: { notNull: true } } ? K : never }[keyof F];
/** Keys of the columns of table `N` itself, its primary key excepted: what a create or an update writes. */
type Own<F, N extends string> = { [K in keyof F]: F[K] extends { _: { tableName: N; isPrimaryKey: false } } ? K : never }[keyof F];
type Defaulted<F> = { [K in keyof F]: F[K] extends { _: { notNull: true; hasDefault: false } } ? never : K }[keyof F];

/** The placeholders of a statement's values `V` (`params<V>()`, src/db/plan.ts). */
type Params<V> = <K extends keyof V & string>(name: K) => Placeholder<K, V[K]>;
type Shape = { readonly columns: Columns; readonly table: string };

/** The representation of the columns `F`: NOT NULL members, and the others absent while NULL. */
export type Representation<F> = Flat<{ [K in NotNull<F>]: Data<F[K]> } & { [K in Exclude<keyof F, NotNull<F>>]?: Data<F[K]> }>;
/** A row as `select(columns)` returns it (NULL as null). */
export type RowOf<F> = { [K in keyof F]: K extends NotNull<F> ? Data<F[K]> : Data<F[K]> | null };
/** What creating the resource takes: its own columns, optional where they have a default or may be NULL. */
export type Creatable<R extends Shape> = Flat<
  { [K in Exclude<Own<R["columns"], R["table"]>, Defaulted<R["columns"]>>]: Data<R["columns"][K]> } & {
    [K in Extract<Own<R["columns"], R["table"]>, Defaulted<R["columns"]>>]?: Data<R["columns"][K]>;
  }
>;
/** The values of a create or update statement (`Resource.values`): every own column, NULL for none. */
export type Values<R extends Shape> = {
  [K in Own<R["columns"], R["table"]>]: K extends NotNull<R["columns"]> ? Data<R["columns"][K]> : Data<R["columns"][K]> | null;
};
/** A JSON Merge Patch (RFC 7396) of the resource's own members: each optional; `null` for one that may be NULL (it removes it). */
export type Patch<R extends Shape> = Partial<Values<R>>;

/** A representation: `columns` of table `table` (see the module header). */
export interface Resource<F extends Columns = Columns, T extends SQLiteTable = SQLiteTable, N extends string = T["_"]["name"]> {
  readonly table: N;
  /** The members left out while NULL: what a JSON Merge Patch's `null` removes (src/http/merge-patch.ts). */
  readonly optional: readonly (Exclude<keyof F, NotNull<F>> & string)[];
  /** The select list. */
  readonly columns: F;
  /** The representation of a row: NULL members left out. */
  present(row: RowOf<F>): Representation<F>;
  /** The representation as JSON text built in SQL, with `overrides` in place of columns (a value before its change). */
  json(overrides?: { [K in keyof F]?: SQL }): SQL<string>;
  /** The values of a create or an update from `input`: each own column's value, else its default, else NULL. */
  values(input: { [K in keyof F]?: Data<F[K]> | null }): Values<{ columns: F; table: N }>;
  /** An update's assignments: each own column set to the value of its name in `p`. */
  assignments<V extends Values<{ columns: F; table: N }>>(p: Params<V>): Record<string, SQL>;
  /** A create's select list, every table column in order: its override, else NULL (primary key), its value in `p`, its default; else throws. */
  createColumns<V extends Values<{ columns: F; table: N }>>(
    p: Params<V>,
    overrides?: Record<string, SQL | SQLiteColumn>,
  ): { [K in keyof T["_"]["columns"]]: SQL.Aliased | SQLiteColumn };
}

/** As JSON in SQL: booleans as JSON `true`/`false`, others as they are. */
function jsonValue(column: Column, value: SQL | Column): SQL {
  return column.dataType === "boolean" ? sql`json(CASE WHEN ${value} THEN 'true' ELSE 'false' END)` : sql`${value}`;
}

/** The JSON members of `entries`, each column or its override as JSON in SQL. */
function members(entries: [string, Column][], overrides: Record<string, SQL | undefined>): Record<string, SQL> {
  return Object.fromEntries(entries.map(([name, column]) => [name, jsonValue(column, overrides[name] ?? column)]));
}

/** The representation `columns` of `table` (list order: see the module header). */
export function representation<T extends SQLiteTable, F extends Columns>(table: T, columns: F): Resource<F, T> {
  const entries = Object.entries(columns);
  const required = entries.filter(([, column]) => column.notNull);
  const nullable = entries.filter(([, column]) => !column.notNull);
  const own = entries.filter(([, column]) => column.table === table && !column.primary);
  const tableColumns = getTableColumns(table) as Record<string, SQLiteColumn>;
  return {
    table: getTableName(table) as T["_"]["name"],
    optional: nullable.map(([name]) => name) as unknown as Resource<F, T>["optional"],
    columns,
    present(row) {
      const out: Record<string, unknown> = {};
      for (const [name] of required) out[name] = row[name];
      for (const [name] of nullable) if (row[name] !== null) out[name] = row[name];
      return out as Representation<F>;
    },
    json(overrides = {}) {
      const object = jsonObject(members(required, overrides));
      // RFC 7396: merging a null member removes it, so a NULL column is left out.
      return nullable.length === 0 ? object : sql<string>`json_patch(${object}, ${jsonObject(members(nullable, overrides))})`;
    },
    values(input) {
      const out: Record<string, unknown> = {};
      for (const [name, column] of own) out[name] = input[name] ?? column.default ?? null;
      return out as Values<{ columns: F; table: T["_"]["name"] }>;
    },
    assignments(p) {
      const named = p as unknown as (name: string) => Placeholder;
      return Object.fromEntries(own.map(([name]) => [name, sql`${named(name)}`]));
    },
    createColumns(p, overrides = {}) {
      const named = p as unknown as (name: string) => Placeholder;
      const list = Object.fromEntries(
        Object.entries(tableColumns).map(([name, column]) => {
          const value =
            overrides[name] ?? (column.primary ? sql`NULL` : name in columns ? sql`${named(name)}` : column.hasDefault ? sql`${column.default}` : undefined);
          if (value === undefined) throw new Error(`representation: no value for ${name} in a create statement`);
          return [name, value];
        }),
      );
      return aliasedColumns(list) as { [K in keyof T["_"]["columns"]]: SQL.Aliased | SQLiteColumn };
    },
  };
}
