/**
 * Preview deployments (scripts/preview.ts): names derived from branches, and
 * the dry run's plan — every command, in order, secrets never printed — plus
 * the bundle it builds.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DATABASE_NAME_MAX, previewNames, WORKER_NAME_MAX } from "../../scripts/preview";

const NAME = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

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
  it("prints the whole plan in order and builds the bundle", () => {
    const outdir = mkdtempSync(join(tmpdir(), "petstore-preview-"));
    try {
      const env: Record<string, string | undefined> = { ...process.env, TURSO_MAIN_DB: "petstore-main", WRANGLER_SEND_METRICS: "false" };
      delete env.TURSO_API_TOKEN;
      delete env.PREVIEW_DATABASE_URL;
      delete env.CLOUDFLARE_API_TOKEN;
      const result = spawnSync(process.execPath, ["--import", "tsx", "scripts/preview.ts", "feature/Add_Cats!!", "--dry-run", "--outdir", outdir], {
        encoding: "utf8",
        env,
        timeout: 120_000,
      });
      expect(result.status, result.stderr).toBe(0);
      const commands = result.stdout
        .split("\n")
        .filter((line) => line.startsWith("$ "))
        .map((line) => line.slice(2).replace(/ {2}#.*$/, ""));
      const worker = "petstore-feature-add-cats";
      expect(commands).toEqual([
        `turso db create ${worker} --from-db petstore-main`,
        `turso db show ${worker} --url`,
        `turso db tokens create ${worker}`,
        "DATABASE_URL='<url from turso db show>' DATABASE_AUTH_TOKEN='<token from turso db tokens create>' node --import tsx scripts/db-migrate.ts",
        `wrangler secret put DATABASE_AUTH_TOKEN --env preview --name ${worker}`,
        `wrangler deploy --minify --env preview --name ${worker} --var 'DATABASE_URL:<url from turso db show>'`,
        `wrangler deploy --dry-run --outdir ${outdir} --minify --env preview --name ${worker}`,
      ]);
      expect(result.stdout).toContain(`Worker ${worker}, database ${worker}`);
      expect(existsSync(join(outdir, "worker.js")), "the dry run built the bundle").toBe(true);
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  });

  it("plans the removal of a preview", () => {
    const env: Record<string, string | undefined> = { ...process.env };
    delete env.TURSO_API_TOKEN;
    delete env.PREVIEW_DATABASE_URL;
    const result = spawnSync(process.execPath, ["--import", "tsx", "scripts/preview.ts", "feature/Add_Cats!!", "--destroy", "--dry-run"], { encoding: "utf8", env });
    expect(result.status, result.stderr).toBe(0);
    const commands = result.stdout.split("\n").filter((line) => line.startsWith("$ "));
    expect(commands).toEqual(["$ wrangler delete --name petstore-feature-add-cats --force", "$ turso db destroy petstore-feature-add-cats --yes"]);
  });

  it("refuses to run without a branch", () => {
    const result = spawnSync(process.execPath, ["--import", "tsx", "scripts/preview.ts"], { encoding: "utf8" });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain("usage:");
  });
});
