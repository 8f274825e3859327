/**
 * The schema is the one source of the column names (issue 15): every query
 * goes through Drizzle with schema columns, so renaming a column in
 * src/db/schema.ts breaks the TypeScript build where the services use it,
 * instead of failing at run time. Checked for real: src/ is copied into a
 * temporary project (the project's tsconfig.json limited to src/,
 * node_modules linked), type-checked as it is (must pass, so that this test
 * can fail), then with `pets.categoryId` renamed to `pets.categoryRef` in the
 * copy's schema (must fail, naming files under src/services/).
 */
import { execFile } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const TSC = join(ROOT, "node_modules", "typescript", "bin", "tsc");
const TSC_TIMEOUT_MS = 120_000;

let dir = "";

/** `tsc --noEmit` on the copy: its exit code and its diagnostics, one per line, paths relative to the copy (`src/…`). */
function typecheck(): Promise<{ code: number; lines: string[] }> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [TSC, "-p", "tsconfig.json", "--noEmit", "--pretty", "false"],
      { cwd: dir, timeout: TSC_TIMEOUT_MS, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : null) : 0;
        if (code === null) return reject(new Error(`tsc did not finish: ${error?.message}\n${stderr}`));
        resolve({ code, lines: stdout.split("\n").filter((line) => /^\S.*\(\d+,\d+\): error TS\d+/.test(line)) });
      },
    );
  });
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
  it("the copy of src/ type-checks as it is", { timeout: TSC_TIMEOUT_MS }, async () => {
    const { code, lines } = await typecheck();
    expect(lines).toEqual([]);
    expect(code).toBe(0);
  });

  it("renaming pets.categoryId fails tsc in the services that use it", { timeout: TSC_TIMEOUT_MS }, async () => {
    const schemaPath = join(dir, "src", "db", "schema.ts");
    const schema = readFileSync(schemaPath, "utf8");
    expect(schema).toMatch(/export const pets = sqliteTable\([\s\S]*?\bcategoryId: integer\(\)/);
    writeFileSync(schemaPath, schema.replace(/\bcategoryId\b/g, "categoryRef"));

    const { code, lines } = await typecheck();
    expect(code).not.toBe(0);
    const inServices = lines.filter((line) => line.startsWith("src/services/"));
    expect(inServices.length, `no error under src/services/; all errors:\n${lines.join("\n")}`).toBeGreaterThan(0);
  });
});
