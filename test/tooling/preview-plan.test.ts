/**
 * Preview deployments without deploying (scripts/preview.ts,
 * docs/deployment.md#previews-one-per-branch): the Worker and database names
 * derived from a branch (valid, within limits, distinct, never production's),
 * and the dry run, which prints the plan and builds the bundle without
 * credentials or requests. The real deploy is in preview.test.ts.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { unstable_readConfig } from "wrangler";
import { DATABASE_NAME_MAX, PRODUCTION_WORKER as PROTECTED_WORKER, assertPreviewNames, previewNames, WORKER_NAME_MAX } from "../../scripts/preview-names";
import { ROOT } from "../../scripts/sqld";
import { BRANCH, MAIN_DB, usePreviewRunner, WORKER } from "../support/preview-runner";

const NAME = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
const runPreview = usePreviewRunner();

describe("preview names", () => {
  it("derives lowercase a-z0-9- names from a branch", () => {
    expect(previewNames("feature/Add_Cats!!")).toEqual({
      slug: "feature-add-cats",
      worker: "petstore-feature-add-cats",
      database: "petstore-feature-add-cats",
    });
    expect(previewNames("main").worker).toBe("petstore-main");
    expect(previewNames("dependabot/npm_and_yarn/hono-4.13.19").worker).toBe("petstore-dependabot-npm-and-yarn-hono-4-13-19");
    expect(previewNames("Café/Ünïcode").slug).toBe("cafe-unicode");
  });

  it("refuses the production Worker (wrangler.toml's name) and the main database", () => {
    expect(unstable_readConfig({ config: join(ROOT, "wrangler.toml") }).name).toBe(PROTECTED_WORKER);
    expect(() => assertPreviewNames("main", "petstore-main")).toThrow(/refusing preview name petstore-main/);
    expect(() => assertPreviewNames("Main!", "petstore-main")).toThrow(/refusing/);
    expect(assertPreviewNames("main", "petstore-production").worker).toBe("petstore-main");
  });

  it("keeps names within their limits, distinct, and valid for any branch", () => {
    const long = `feature/${"very-long-branch-name-".repeat(6)}a`;
    const longer = `${long}b`;
    for (const branch of [long, longer, "!!!", "--", "a".repeat(200), "UPPER/lower/123", "x"]) {
      const { worker, database } = previewNames(branch);
      expect(worker.length, worker).toBeLessThanOrEqual(WORKER_NAME_MAX);
      expect(database.length, database).toBeLessThanOrEqual(DATABASE_NAME_MAX);
      expect(worker).toMatch(NAME);
      expect(database).toMatch(NAME);
      expect(worker.startsWith("petstore-")).toBe(true);
    }
    expect(previewNames(long).worker).not.toBe(previewNames(longer).worker);
    expect(previewNames(long).database).not.toBe(previewNames(longer).database);
    expect(previewNames("!!!").worker).toMatch(/^petstore-branch-[0-9a-f]{6}$/);
    expect(previewNames(long).worker).toMatch(/-[0-9a-f]{6}$/);
  });
});

describe("npm run preview -- <branch> --dry-run", () => {
  it("prints the plan and builds the bundle without credentials", { timeout: 120_000 }, async () => {
    const outdir = mkdtempSync(join(tmpdir(), "petstore-preview-"));
    try {
      const result = await runPreview([BRANCH, "--dry-run", "--outdir", outdir], { TURSO_MAIN_DB: MAIN_DB });
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toContain(`Worker ${WORKER}, database ${WORKER}`);
      expect(result.stdout).toContain(
        `$ wrangler deploy --env preview --name ${WORKER} --minify --var DATABASE_URL:<database URL> --secrets-file <DATABASE_AUTH_TOKEN>`,
      );
      expect(existsSync(join(outdir, "worker.js")), `the dry run built the bundle: ${readdirSync(outdir).join(", ")}`).toBe(true);
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  });

  it("plans a removal without credentials or requests", async () => {
    const result = await runPreview([BRANCH, "--destroy", "--dry-run"], { TURSO_MAIN_DB: MAIN_DB });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout.split("\n").filter((line) => line.startsWith("would remove"))).toEqual([
      `would remove Worker ${WORKER}`,
      `would remove database ${WORKER}`,
    ]);
  });

  it("refuses to run without a branch", async () => {
    const result = await runPreview([]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("usage:");
  });
});
