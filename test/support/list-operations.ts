/**
 * The list operations of a served OpenAPI document and the lists each offers (docs/database-cost.md#deep-pages):
 * every GET that takes `limit`, per role that may call it, unfiltered and under each filter value the document
 * names. test/architecture/deep-page-cost.test.ts walks each of them deep.
 */

interface Schema {
  $ref?: string;
  type?: string;
  enum?: unknown[];
  default?: number;
  maximum?: number;
}
interface Parameter {
  name: string;
  in: string;
  schema?: Schema;
}
interface Operation {
  operationId?: string;
  parameters?: Parameter[];
  "x-roles"?: string[];
}
/** The parts of an OpenAPI 3.0 document this module reads. */
export interface Document {
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, Schema> };
}

/** A list operation: `GET path`, its page sizes and what its requests may name. */
export interface ListOperation {
  operationId: string;
  path: string;
  /** `anon` for a public operation, else its `x-roles`. */
  callers: string[];
  /** `limit`'s default and maximum. */
  limits: { default: number; maximum: number };
  /** Path parameters, by name. */
  pathParameters: string[];
  /** Query parameters that filter (not `limit` nor the cursor), with their schemas. */
  filters: { name: string; schema: Schema }[];
}

/** One list to walk: an operation as one caller, unfiltered (`filter` undefined) or under one filter value. */
export interface ListCase {
  operation: ListOperation;
  caller: string;
  /** The filter's value is read when called: ids are known once the dataset is. */
  filter?: { name: string; value: () => string };
  /** `GET /path?filter=value (caller)`, as the cost tables name a request (an id's value left out). */
  label: string;
}

/** The query parameters that page rather than filter: the page size and the cursors (`after` of GET /events, docs/api.md#lists-and-pagination). */
const PAGING = new Set(["limit", "cursor", "after"]);

/** `schema` with its `$ref` (to `#/components/schemas/…`) followed. */
function resolve(document: Document, schema: Schema | undefined): Schema {
  const name = schema?.$ref?.replace("#/components/schemas/", "");
  return (name === undefined ? schema : document.components?.schemas?.[name]) ?? {};
}

/** Every GET of `document` with a `limit` query parameter, in the document's order. */
export function listOperations(document: Document): ListOperation[] {
  return Object.entries(document.paths).flatMap(([path, item]) => {
    const get = item.get;
    const parameters = get?.parameters ?? [];
    const limit = parameters.find((p) => p.in === "query" && p.name === "limit");
    if (!get || !limit) return [];
    const limitSchema = resolve(document, limit.schema);
    const roles = get["x-roles"] ?? [];
    return [
      {
        operationId: get.operationId ?? `GET ${path}`,
        path,
        callers: roles.length > 0 ? roles : ["anon"],
        limits: { default: limitSchema.default ?? 20, maximum: limitSchema.maximum ?? 100 },
        pathParameters: parameters.filter((p) => p.in === "path").map((p) => p.name),
        filters: parameters.filter((p) => p.in === "query" && !PAGING.has(p.name)).map((p) => ({ name: p.name, schema: resolve(document, p.schema) })),
      },
    ];
  });
}

/** Values of path parameters and id filters, by parameter name, read when called. */
export type Values = Record<string, () => number | string>;

/**
 * The values a filter is walked under, each with how it is shown: each value of an enum, both of a boolean, the one `values`
 * names for an id; none for an array (a batch look-up of at most `maxItems` ids is never deep). `undefined`: an id `values` lacks.
 */
function filterValues(filter: { name: string; schema: Schema }, values: Values): { shown: string; value: () => string }[] | undefined {
  const { schema } = filter;
  if (schema.type === "array") return [];
  const constants = schema.enum?.map(String) ?? (schema.type === "boolean" ? ["true", "false"] : undefined);
  if (constants) return constants.map((v) => ({ shown: v, value: () => v }));
  const id = values[filter.name];
  return id && [{ shown: "", value: () => String(id()) }];
}

/** Every case of `operations` (but those with a path parameter `values` lacks): per caller, the unfiltered list and one per filter value. */
export function listCases(operations: ListOperation[], values: Values): ListCase[] {
  const reachable = operations.filter((operation) => operation.pathParameters.every((name) => values[name]));
  return reachable.flatMap((operation) =>
    operation.callers.flatMap((caller) => {
      const label = (query: string) => `GET ${operation.path}${query}${caller === "anon" ? "" : ` (${caller})`}`;
      const filtered = operation.filters.flatMap((f) =>
        (filterValues(f, values) ?? []).map(({ shown, value }) => ({
          operation,
          caller,
          filter: { name: f.name, value },
          label: label(`?${f.name}=${shown}`),
        })),
      );
      return [{ operation, caller, label: label("") }, ...filtered];
    }),
  );
}

/** What `values` lacks to walk `operations`: `operationId: name` for each path parameter or id filter without a value. */
export function missingValues(operations: ListOperation[], values: Values): string[] {
  return operations.flatMap((operation) => [
    ...operation.pathParameters.filter((name) => !values[name]).map((name) => `${operation.operationId}: path parameter {${name}}`),
    ...operation.filters.filter((f) => filterValues(f, values) === undefined).map((f) => `${operation.operationId}: filter ${f.name}`),
  ]);
}

/** `operation`'s path with its path parameters filled from `values`. */
export function concretePath(operation: ListOperation, values: Values): string {
  return operation.path.replace(/\{(\w+)\}/g, (_, name: string) => String(values[name]!()));
}
