/**
 * docs/configuration.md documents the settings from the same source as src/config.ts reads them: every variable of a runtime's
 * schema has a row in the table, every name in the table is in a schema, and where the schema gives a default the table shows it.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { SETTINGS_SCHEMAS } from "../../src/config";

const DOC = readFileSync(new URL("../../docs/configuration.md", import.meta.url), "utf8");

/** Each name of the first table (a row may name several, `A`, `B`) with its default cell (split the same way when it lists as many). */
function documented(): Map<string, string> {
  const rows = DOC.split("## ")[0]!
    .split("\n")
    .filter((line) => line.startsWith("| `"));
  const entries = rows.flatMap((row) => {
    const [names = "", defaults = ""] = row.split(" | ");
    const list = [...names.matchAll(/`([A-Z0-9_]+)`/g)].map((m) => m[1]!);
    const cells = defaults.split(", ");
    return list.map((name, i) => [name, (cells.length === list.length ? cells[i]! : defaults).trim()] as const);
  });
  return new Map(entries);
}

/** Each variable of every runtime's schema with the default the schema gives an unset one (undefined when none). */
function declared(): Map<string, string | undefined> {
  const fields = Object.values(SETTINGS_SCHEMAS).flatMap((schema) => Object.entries(schema.shape));
  return new Map(
    fields.map(([name, field]) => {
      const def = field.def as { type: string; defaultValue?: unknown };
      return [name, def.type === "default" || def.type === "prefault" ? String(def.defaultValue) : undefined];
    }),
  );
}

describe("docs/configuration.md and the settings schema", () => {
  const docs = documented();
  const schema = declared();

  it("read a table and the schemas", () => {
    expect(docs.size).toBeGreaterThan(40);
    expect(schema.get("PORT")).toBe("8787");
    expect(docs.get("PORT")).toBe("`8787`");
  });

  it("every variable of the schema is documented, and every documented variable is in the schema", () => {
    expect(
      [...schema.keys()].filter((name) => !docs.has(name)),
      "in src/config.ts, not in the table",
    ).toEqual([]);
    expect(
      [...docs.keys()].filter((name) => !schema.has(name)),
      "in the table, not in src/config.ts",
    ).toEqual([]);
  });

  it("the table shows the schema's default of each variable that has one", () => {
    const wrong = [...schema].filter(([name, value]) => value !== undefined && docs.get(name) !== `\`${value}\``);
    expect(wrong.map(([name, value]) => `${name}: schema ${value}, table ${docs.get(name)}`)).toEqual([]);
  });
});
