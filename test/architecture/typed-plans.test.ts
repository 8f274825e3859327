/**
 * Plans and statements declare their values once (src/db/plan.ts `params`):
 * `run`, `read` and `execute` do not compile with a missing, misspelled or
 * extra value, or a value of the wrong type. `npm run typecheck` checks the
 * `@ts-expect-error` lines below (each fails the typecheck if its error
 * disappears); vitest runs the rest against a real database.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { eq, sql } from "drizzle-orm";
import { beforeAll, describe, expect, expectTypeOf, it } from "vitest";
import { type Database, qb } from "../../src/db/client";
import { execute, guarded, type PlanValues, params, plan, read, run, statement, type ValuesOf, withValues } from "../../src/db/plan";
import { categories } from "../../src/db/schema";
import { createCategory } from "../../src/services/categories.service";
import { nodeTarget } from "../support/node-target";

const p = params<{ id: number; name: string }>();
const byId = params<{ id: number }>();

const rename = p.prepare(
  qb
    .update(categories)
    .set({ name: sql`${p("name")}` })
    .where(eq(categories.id, p("id"))),
);
const nameOf = byId.prepare(
  qb
    .select({ name: categories.name })
    .from(categories)
    .where(eq(categories.id, byId("id"))),
);
const renaming = plan({ rename: statement(rename), renamed: guarded(() => nameOf) });
const reading = plan({ category: statement(nameOf) });

let db: Database;
let id: number;

beforeAll(async () => {
  db = (await nodeTarget()).db;
  id = (await createCategory(db, { name: "Typed" }, new Date())).id;
});

describe("typed plans", () => {
  it("types a statement and a plan by the values of their placeholders", () => {
    expectTypeOf<ValuesOf<typeof rename>>().toEqualTypeOf<{ id: number; name: string }>();
    expectTypeOf<PlanValues<typeof renaming.steps>>().toEqualTypeOf<{ id: number; name: string } & { id: number }>();
    expectTypeOf(p("id")).toHaveProperty("name").toEqualTypeOf<"id">();
  });

  it("runs with exactly the declared values", async () => {
    const { renamed } = await run(db, renaming, { id, name: "Typed and renamed" });
    expectTypeOf(renamed).toEqualTypeOf<{ name: string }[]>();
    expect(renamed).toEqual([{ name: "Typed and renamed" }]);
    expect((await read(db, reading, { id })).category).toEqual([{ name: "Typed and renamed" }]);
    expect(await execute(db, nameOf, { id })).toEqual([{ name: "Typed and renamed" }]);
  });

  it("does not compile with a missing, misspelled, extra or mistyped value", () => {
    // Type checks only: never called.
    const never = (_: () => unknown) => {};
    // @ts-expect-error a missing value (`name`)
    never(() => run(db, renaming, { id }));
    // @ts-expect-error a misspelled name (`Id`)
    never(() => run(db, renaming, { Id: id, name: "x" }));
    // @ts-expect-error an extra value (`version`)
    never(() => run(db, renaming, { id, name: "x", version: 1 }));
    const extra = { id, version: 1 };
    // @ts-expect-error an extra value, from a variable (no excess-property check would catch it)
    never(() => execute(db, nameOf, extra));
    // @ts-expect-error a value of the wrong type
    never(() => read(db, reading, { id: "1" }));
    // @ts-expect-error an extra value in one run of a batch
    never(() => withValues(reading, { id, name: "x" }));
    // @ts-expect-error a placeholder whose name the values do not declare
    never(() => byId("name"));
    // @ts-expect-error a prepared query that does not declare its values
    never(() => statement(qb.select().from(categories).prepare()));
  });

  it("guards a step by the step before it in the plan; a guarded first step fails when the module loads", () => {
    expect(renaming.steps.renamed.guarded).toBe(true);
    expect(() => plan({ renamed: guarded(() => nameOf) })).toThrow(/first step "renamed" is guarded/);
  });

  it("every placeholder outside src/db/plan.ts comes from `params` (so its name is checked)", () => {
    const src = fileURLToPath(new URL("../../src/", import.meta.url));
    const files = readdirSync(src, { recursive: true, encoding: "utf8" }).filter((file) => file.endsWith(".ts") && file !== join("db", "plan.ts"));
    expect(files.filter((file) => /sql\.placeholder\(|\bplaceholder\(/.test(readFileSync(join(src, file), "utf8")))).toEqual([]);
  });
});
