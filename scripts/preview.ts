/**
 * `npm run preview -- …`: preview deployments per git branch (docs/deployment.md#previews-one-per-branch).
 *
 *   <branch> [--dry-run] [--outdir dist]    deploy (or plan + build the bundle)
 *   <branch> --destroy [--dry-run]          remove the branch's Worker and database
 *   --prune --live-branches <file|-> [--dry-run]
 *                                           remove every preview whose branch is not listed
 *
 * A preview is a Worker `petstore-<slug>` (wrangler environment `preview`: no
 * cron, webhooks off) on its own Turso database `petstore-<slug>`
 * (scripts/preview-names.ts), which is created empty, migrated and seeded from
 * the corpora (scripts/preview-database.ts). Deploy steps:
 * 1. database: create if absent (Platform API), mint its expiring token,
 *    migrate, seed (CORPORA_DIR, default scripts/corpora; required);
 * 2. one `wrangler deploy --env preview --name <worker> --var DATABASE_URL:<url>
 *    --secrets-file <file with DATABASE_AUTH_TOKEN>` (scripts/preview-worker.ts);
 * 3. `GET <url>/health` must answer 200 within PREVIEW_HEALTH_TIMEOUT_SECONDS
 *    (default 120). The URL is the workers.dev one wrangler reports, or
 *    PREVIEW_ORIGIN when set (a custom domain, or a local server in tests).
 * Any failure exits non-zero. Names equal to the production Worker or database
 * (TURSO_MAIN_DB, default `petstore`) are refused before anything runs.
 * Teardown and prune try every removal, then exit 1 if any failed; something
 * already gone counts as removed.
 *
 * Environment: CLOUDFLARE_API_TOKEN, CLOUDFLARE_ACCOUNT_ID; TURSO_API_TOKEN,
 * TURSO_ORG, TURSO_GROUP, TURSO_MAIN_DB, TURSO_API_BASE_URL,
 * PREVIEW_TOKEN_EXPIRATION (scripts/preview-database.ts). Exit codes: 0 done,
 * 1 failed, 2 usage or missing configuration.
 */
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { deletePreviewDatabase, listDatabases, preparePreviewDatabase, tursoClient, tursoSettings } from "./preview-database";
import { assertPreviewNames, isPreviewName, previewNames, protectedNames } from "./preview-names";
import { deleteWorker, deployWorker, listWorkers, runWrangler, waitForHealth } from "./preview-worker";
import { DEFAULT_CORPORA_DIR } from "./seed";
import { buildAssets } from "./build-assets";

const USAGE = `usage: npm run preview -- <branch> [--dry-run] [--outdir dist]
       npm run preview -- <branch> --destroy [--dry-run]
       npm run preview -- --prune --live-branches <file|-> [--dry-run]`;

/** A missing setting or bad arguments: exit code 2. */
class UsageError extends Error {}

function requireEnv(names: string[]): void {
  const missing = names.filter((name) => !process.env[name]);
  if (missing.length > 0) throw new UsageError(`missing ${missing.join(", ")}`);
}

async function deploy(branch: string, dryRun: boolean, outdir: string): Promise<void> {
  const names = assertPreviewNames(branch, process.env.TURSO_MAIN_DB);
  const corporaDir = process.env.CORPORA_DIR || DEFAULT_CORPORA_DIR;
  console.log(`branch ${JSON.stringify(branch)} → Worker ${names.worker}, database ${names.database}`);
  if (dryRun) {
    console.log("dry run; a deploy would:");
    console.log(
      `1. create the Turso database ${names.database} (empty, Platform API) unless it exists, mint its token (expiring), migrate it, seed it from ${corporaDir}`,
    );
    console.log(`2. $ wrangler deploy --env preview --name ${names.worker} --minify --var DATABASE_URL:<database URL> --secrets-file <DATABASE_AUTH_TOKEN>`);
    console.log("3. GET <workers.dev URL>/health until 200");
    console.log("building the bundle:");
    buildAssets();
    const code = await runWrangler(["deploy", "--dry-run", "--outdir", outdir, "--env", "preview", "--name", names.worker, "--minify"]);
    if (code !== 0) throw new Error(`wrangler deploy --dry-run failed (exit ${code})`);
    return;
  }
  requireEnv(["CLOUDFLARE_API_TOKEN", "CLOUDFLARE_ACCOUNT_ID", "TURSO_API_TOKEN", "TURSO_ORG"]);
  if (!existsSync(join(corporaDir, "common.json"))) throw new UsageError(`no corpora at ${corporaDir} to seed the preview from (set CORPORA_DIR)`);
  const settings = tursoSettings(process.env);
  const database = await preparePreviewDatabase(tursoClient(settings), settings, names.database, corporaDir);
  console.log(
    `database ${names.database} ${database.created ? "created" : "exists"}, migrated, seeded: ` +
      `categories ${database.seed.categories.created} created, pets ${database.seed.pets.created} created`,
  );
  buildAssets();
  const workersDev = await deployWorker({ worker: names.worker, databaseUrl: database.url, databaseToken: database.token });
  const origin = process.env.PREVIEW_ORIGIN || workersDev;
  const timeoutMs = Number(process.env.PREVIEW_HEALTH_TIMEOUT_SECONDS || 120) * 1000;
  console.log(`deployed ${names.worker} at ${workersDev}; checking ${origin}/health`);
  await waitForHealth(origin, timeoutMs);
  console.log(`preview of ${branch} is up: ${workersDev}`);
}

/**
 * Remove `workers` and `databases` (each checked again with `isPreviewName`),
 * trying every one; returns the failures.
 */
async function remove(workers: string[], databases: string[], dryRun: boolean): Promise<string[]> {
  const forbidden = protectedNames(process.env.TURSO_MAIN_DB);
  const failures: string[] = [];
  const attempt = async (what: string, name: string, action: () => Promise<boolean>) => {
    if (!isPreviewName(name, forbidden)) {
      failures.push(`${what} ${name}: refused, not a preview name`);
      return;
    }
    if (dryRun) {
      console.log(`would remove ${what} ${name}`);
      return;
    }
    try {
      console.log(`${what} ${name}: ${(await action()) ? "removed" : "already gone"}`);
    } catch (error) {
      failures.push(`${what} ${name}: ${error instanceof Error ? error.message : String(error)}`);
    }
  };
  const settings = databases.length > 0 && !dryRun ? tursoSettings(process.env) : undefined;
  for (const name of workers) await attempt("Worker", name, () => deleteWorker(name, process.env));
  for (const name of databases) await attempt("database", name, () => deletePreviewDatabase(tursoClient(settings!), name));
  return failures;
}

async function destroy(branch: string, dryRun: boolean): Promise<void> {
  const names = assertPreviewNames(branch, process.env.TURSO_MAIN_DB);
  console.log(`branch ${JSON.stringify(branch)} → Worker ${names.worker}, database ${names.database}`);
  if (!dryRun) requireEnv(["CLOUDFLARE_API_TOKEN", "CLOUDFLARE_ACCOUNT_ID", "TURSO_API_TOKEN", "TURSO_ORG"]);
  const failures = await remove([names.worker], [names.database], dryRun);
  if (failures.length > 0) throw new Error(`teardown failed:\n${failures.join("\n")}`);
}

/** Branch names, one a line, from `file` (`-`: standard input). */
function readBranches(file: string): string[] {
  return readFileSync(file === "-" ? 0 : file, "utf8")
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean);
}

async function prune(liveBranchesFile: string, dryRun: boolean): Promise<void> {
  requireEnv(["CLOUDFLARE_API_TOKEN", "CLOUDFLARE_ACCOUNT_ID", "TURSO_API_TOKEN", "TURSO_ORG"]);
  const live = readBranches(liveBranchesFile).map(previewNames);
  const keepWorkers = new Set(live.map((n) => n.worker));
  const keepDatabases = new Set(live.map((n) => n.database));
  const forbidden = protectedNames(process.env.TURSO_MAIN_DB);
  const settings = tursoSettings(process.env);
  const workers = (await listWorkers(process.env)).filter((name) => isPreviewName(name, forbidden) && !keepWorkers.has(name));
  const databases = (await listDatabases(tursoClient(settings), settings)).filter((name) => isPreviewName(name, forbidden) && !keepDatabases.has(name));
  console.log(`${live.length} live branches; stale previews: ${workers.length} Workers, ${databases.length} databases`);
  const failures = await remove(workers, databases, dryRun);
  if (failures.length > 0) throw new Error(`prune failed:\n${failures.join("\n")}`);
}

/** The command line's options and positionals; throws a TypeError on an unknown or malformed option. */
function parseCommandLine(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      "dry-run": { type: "boolean", default: false },
      destroy: { type: "boolean", default: false },
      prune: { type: "boolean", default: false },
      "live-branches": { type: "string" },
      outdir: { type: "string", default: "dist" },
    },
  });
}

/** Parse `argv` and run; resolves with the exit code. */
export async function main(argv: string[]): Promise<number> {
  let parsed: ReturnType<typeof parseCommandLine>;
  try {
    parsed = parseCommandLine(argv);
  } catch (error) {
    console.error(`${error instanceof Error ? error.message : String(error)}\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const dryRun = values["dry-run"]!;
  try {
    if (values.prune) {
      if (positionals.length > 0 || values.destroy || !values["live-branches"]) throw new UsageError(USAGE);
      await prune(values["live-branches"], dryRun);
    } else {
      const branch = positionals[0];
      if (!branch || positionals.length > 1) throw new UsageError(USAGE);
      if (values.destroy) await destroy(branch, dryRun);
      else await deploy(branch, dryRun, values.outdir!);
    }
    return 0;
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    return error instanceof UsageError ? 2 : 1;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  process.exit(await main(process.argv.slice(2)));
}
