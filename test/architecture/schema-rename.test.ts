/**
 * The schema is the one source of the column names (issue 15): every query
 * goes through Drizzle with schema columns, so renaming a column in
 * src/db/schema.ts breaks the TypeScript build where the services use it,
 * instead of failing at run time. Checked for real: src/ is copied into a
 * temporary project (the project's tsconfig.json limited to src/,
 * node_modules linked), type-checked as it is (must pass, so that this test
 * can fail), then with `pets.categoryId` renamed to `pets.categoryRef` in the
 * copy's schema (must fail, naming files under src/services/). Both checks
 * are TypeScript's own (its compiler API, what `tsc --noEmit` runs, with the
 * options the copy's tsconfig.json gives), in this process; the second reuses
 * the files the first parsed and that did not change (all but the schema), as
 * `tsc --watch` does: half the CPU of a second `tsc`.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const TSC_TIMEOUT_MS = 120_000;

let dir = "";

/** Source files parsed by an earlier check, by path: reused while their text is unchanged. */
const parsed = new Map<string, ts.SourceFile>();
let previous: ts.Program | undefined;

/** `tsc --noEmit` on the copy: 0 or 2 (errors) as tsc exits, and its diagnostics, one per line, paths relative to the copy (`src/…`). */
function typecheck(): { code: number; lines: string[] } {
  const config = ts.getParsedCommandLineOfConfigFile(
    join(dir, "tsconfig.json"),
    { noEmit: true },
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n"));
      },
    },
  )!;
  const host = ts.createCompilerHost(config.options);
  const read = host.getSourceFile;
  host.getSourceFile = (fileName, languageVersion, onError, shouldCreate) => {
    const known = parsed.get(fileName);
    if (known && known.text === ts.sys.readFile(fileName)) return known;
    const file = read(fileName, languageVersion, onError, shouldCreate);
    if (file) parsed.set(fileName, file);
    return file;
  };
  const program = ts.createProgram({
    rootNames: config.fileNames,
    options: config.options,
    host,
    oldProgram: previous,
    configFileParsingDiagnostics: ts.getConfigFileParsingDiagnostics(config),
  });
  previous = program;
  const diagnostics = ts.getPreEmitDiagnostics(program);
  const text = ts.formatDiagnostics(diagnostics, { getCanonicalFileName: (name) => name, getCurrentDirectory: () => dir, getNewLine: () => "\n" });
  return {
    code: diagnostics.some((d) => d.category === ts.DiagnosticCategory.Error) ? 2 : 0,
    lines: text.split("\n").filter((line) => /^\S.*\(\d+,\d+\): error TS\d+/.test(line)),
  };
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "petstore-schema-rename-"));
  cpSync(join(ROOT, "src"), join(dir, "src"), { recursive: true });
  symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"), "dir");
  // The project's compiler options; only src/ (tests and scripts are not copied).
  const tsconfig = JSON.parse(readFileSync(join(ROOT, "tsconfig.json"), "utf8")) as { include: string[]; exclude?: string[] };
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ ...tsconfig, include: ["src"] }, null, 2));
});

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("a schema column renamed breaks the build where it is used", () => {
  it("the copy of src/ type-checks as it is", { timeout: TSC_TIMEOUT_MS }, () => {
    const { code, lines } = typecheck();
    expect(lines).toEqual([]);
    expect(code).toBe(0);
  });

  it("renaming pets.categoryId fails tsc in the services that use it", { timeout: TSC_TIMEOUT_MS }, () => {
    const schemaPath = join(dir, "src", "db", "schema.ts");
    const schema = readFileSync(schemaPath, "utf8");
    expect(schema).toMatch(/export const pets = sqliteTable\([\s\S]*?\bcategoryId: integer\(\)/);
    writeFileSync(schemaPath, schema.replace(/\bcategoryId\b/g, "categoryRef"));

    const { code, lines } = typecheck();
    expect(code).not.toBe(0);
    const inServices = lines.filter((line) => line.startsWith("src/services/"));
    expect(inServices.length, `no error under src/services/; all errors:\n${lines.join("\n")}`).toBeGreaterThan(0);
  });
});
