/**
 * `npm run preview -- <branch> [--dry-run] [--destroy] [--outdir dist]`:
 * a preview deployment per git branch (API.md §8): its own Worker
 * (`petstore-<slug>`, wrangler environment `preview`) on its own database
 * branch, cloned from the main database with the Turso CLI.
 *
 * Steps (in order):
 * 1. `turso db create <db> --from-db <main>` (skipped when `<db>` exists);
 * 2. `turso db show <db> --url` and `turso db tokens create <db>`: URL + token;
 * 3. migrations: `DATABASE_URL=… DATABASE_AUTH_TOKEN=… node --import tsx scripts/db-migrate.ts`;
 * 4. `wrangler secret put DATABASE_AUTH_TOKEN --env preview --name <worker>` (token on stdin);
 * 5. `wrangler deploy --minify --env preview --name <worker> --var DATABASE_URL:<url>`.
 * `--destroy` removes both instead (`wrangler delete`, `turso db destroy`).
 * `--dry-run` prints every command (secrets never printed) and only builds the
 * bundle: `wrangler deploy --dry-run --outdir <outdir> --minify --env preview --name <worker>`.
 *
 * Environment: TURSO_API_TOKEN (Turso CLI auth), TURSO_MAIN_DB (default
 * `petstore`), optional TURSO_GROUP; CLOUDFLARE_API_TOKEN and
 * CLOUDFLARE_ACCOUNT_ID for wrangler. Without the Turso CLI or its token, the
 * preview uses PREVIEW_DATABASE_URL (+ PREVIEW_DATABASE_AUTH_TOKEN), a shared
 * preview database, when set; otherwise the script fails with exit code 2.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { ROOT } from "./sqld";
import { buildAssets } from "./build-assets";

/** Cloudflare Worker names: lowercase a-z, 0-9 and `-`, at most 63 characters. */
export const WORKER_NAME_MAX = 63;
/**
 * Database names, kept to 32 characters (conservative: Turso puts the name in
 * the `<db>-<org>.<region>.turso.io` host, whose first label must stay ≤ 63).
 */
export const DATABASE_NAME_MAX = 32;
const PREFIX = "petstore-";

export interface PreviewNames {
  /** The branch reduced to lowercase a-z0-9 words joined by `-` (may be empty). */
  slug: string;
  worker: string;
  database: string;
}

/** `prefix + slug`, shortened with a stable hash of the branch when longer than `max`. */
function fit(slug: string, branch: string, max: number): string {
  const hash = createHash("sha256").update(branch).digest("hex").slice(0, 6);
  if (!slug) return `${PREFIX}branch-${hash}`;
  const name = `${PREFIX}${slug}`;
  if (name.length <= max) return name;
  const room = max - PREFIX.length - hash.length - 1;
  return `${PREFIX}${slug.slice(0, room).replace(/-+$/, "")}-${hash}`;
}

/**
 * Safe names for a branch: `feature/Add_Cats!!` → worker and database
 * `petstore-feature-add-cats`. Accents are folded (`café` → `cafe`); names too
 * long for their limit are cut and end with 6 hex digits of SHA-256(branch), so
 * two long branches with the same start still get different names.
 */
export function previewNames(branch: string): PreviewNames {
  const slug = branch
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "");
  return { slug, worker: fit(slug, branch, WORKER_NAME_MAX), database: fit(slug, branch, DATABASE_NAME_MAX) };
}

/** One command of the plan. `argv[0]` is the tool as printed (`turso`, `wrangler`, `node`). */
export interface Step {
  argv: string[];
  /** Extra environment, printed as `NAME=value` (secret values as placeholders). */
  env?: Record<string, string>;
  /** Shown after the command. */
  note?: string;
}

export interface PlanOptions {
  mainDatabase: string;
  /** Turso CLI and token present: create a database branch. Otherwise PREVIEW_DATABASE_URL is used. */
  turso: boolean;
  group?: string;
  outdir: string;
}

/** The commands of a preview deployment of `branch`, in order (values known only at run time are `<placeholders>`). */
export function previewPlan(branch: string, options: PlanOptions): { names: PreviewNames; steps: Step[]; build: Step } {
  const names = previewNames(branch);
  const { worker, database } = names;
  const steps: Step[] = [];
  if (options.turso) {
    steps.push({
      argv: ["turso", "db", "create", database, "--from-db", options.mainDatabase, ...(options.group ? ["--group", options.group] : [])],
      note: "skipped when the database exists (checked with `turso db show`)",
    });
    steps.push({ argv: ["turso", "db", "show", database, "--url"], note: "→ DATABASE_URL" });
    steps.push({ argv: ["turso", "db", "tokens", "create", database], note: "→ DATABASE_AUTH_TOKEN (never printed)" });
  }
  const url = options.turso ? "<url from turso db show>" : "$PREVIEW_DATABASE_URL";
  const token = options.turso ? "<token from turso db tokens create>" : "$PREVIEW_DATABASE_AUTH_TOKEN";
  steps.push({ argv: ["node", "--import", "tsx", "scripts/db-migrate.ts"], env: { DATABASE_URL: url, DATABASE_AUTH_TOKEN: token }, note: "apply migrations" });
  steps.push({ argv: ["wrangler", "secret", "put", "DATABASE_AUTH_TOKEN", "--env", "preview", "--name", worker], note: "token on stdin" });
  steps.push({ argv: ["wrangler", "deploy", "--minify", "--env", "preview", "--name", worker, "--var", `DATABASE_URL:${url}`] });
  const build: Step = { argv: ["wrangler", "deploy", "--dry-run", "--outdir", options.outdir, "--minify", "--env", "preview", "--name", worker] };
  return { names, steps, build };
}

/** The commands that remove the preview of `branch`. */
export function destroyPlan(branch: string, options: Pick<PlanOptions, "turso">): Step[] {
  const { worker, database } = previewNames(branch);
  const steps: Step[] = [{ argv: ["wrangler", "delete", "--name", worker, "--force"] }];
  if (options.turso) steps.push({ argv: ["turso", "db", "destroy", database, "--yes"] });
  return steps;
}

/** How a step is printed: `NAME=value … tool args…  # note`. */
export function formatStep(step: Step): string {
  // `$VAR` stays unquoted (the shell expands it); anything else unusual is single-quoted.
  const quote = (a: string) => (/^[\w@%+=:,./$-]+$/.test(a) ? a : `'${a.replace(/'/g, "'\\''")}'`);
  const env = Object.entries(step.env ?? {}).map(([k, v]) => `${k}=${quote(v)}`);
  const line = [...env, ...step.argv.map(quote)].join(" ");
  return step.note ? `${line}  # ${step.note}` : line;
}

// ---------------------------------------------------------------------------
// Execution

interface RunOptions {
  env?: Record<string, string>;
  input?: string;
  capture?: boolean;
  allowFailure?: boolean;
}

/** The real executable of a printed tool name. */
function resolveArgv(argv: string[]): string[] {
  const [tool, ...rest] = argv;
  if (tool === "wrangler") return [process.execPath, join(ROOT, "node_modules/wrangler/bin/wrangler.js"), ...rest];
  if (tool === "node") return [process.execPath, ...rest];
  return argv;
}

function run(step: Step, options: RunOptions = {}): { status: number; stdout: string } {
  console.log(`$ ${formatStep(step)}`);
  const [command, ...args] = resolveArgv(step.argv);
  const result = spawnSync(command!, args, {
    cwd: ROOT,
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", ...options.env },
    input: options.input,
    stdio: [options.input === undefined ? "inherit" : "pipe", options.capture ? "pipe" : "inherit", "inherit"],
    encoding: "utf8",
  });
  const status = result.status ?? 1;
  if (status !== 0 && !options.allowFailure) throw new Error(`command failed (exit ${status}): ${step.argv.slice(0, 3).join(" ")}`);
  return { status, stdout: result.stdout ?? "" };
}

function tursoAvailable(): boolean {
  if (!process.env.TURSO_API_TOKEN) return false;
  return spawnSync("turso", ["--version"], { stdio: "ignore" }).status === 0;
}

function deploy(branch: string, options: PlanOptions): void {
  const { names, steps } = previewPlan(branch, options);
  let url = process.env.PREVIEW_DATABASE_URL ?? "";
  let token = process.env.PREVIEW_DATABASE_AUTH_TOKEN ?? "";
  for (const step of steps) {
    const [tool, ...rest] = step.argv;
    if (tool === "turso" && rest[1] === "create") {
      const exists = spawnSync("turso", ["db", "show", names.database], { stdio: "ignore" }).status === 0;
      if (exists) console.log(`database ${names.database} exists: not recreated`);
      else run(step);
    } else if (tool === "turso" && rest[1] === "show") {
      url = run(step, { capture: true }).stdout.trim();
    } else if (tool === "turso" && rest[1] === "tokens") {
      token = run(step, { capture: true }).stdout.trim();
    } else if (tool === "node") {
      run(step, { env: { DATABASE_URL: url, DATABASE_AUTH_TOKEN: token } });
    } else if (tool === "wrangler" && rest[0] === "secret") {
      run(step, { input: token });
    } else {
      run({ ...step, argv: step.argv.map((a) => a.replace(/^DATABASE_URL:.*$/, `DATABASE_URL:${url}`)) });
    }
  }
  console.log(`preview of ${branch}: Worker ${names.worker}, database ${options.turso ? names.database : "(shared preview database)"}`);
}

function main(argv: string[]): number {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { "dry-run": { type: "boolean", default: false }, destroy: { type: "boolean", default: false }, outdir: { type: "string", default: "dist" } },
  });
  const branch = positionals[0];
  if (!branch || positionals.length > 1) {
    console.error("usage: npm run preview -- <branch> [--dry-run] [--destroy] [--outdir dist]");
    return 2;
  }
  const tursoReady = tursoAvailable();
  // A database branch unless only a shared preview database is configured.
  const turso = tursoReady || !process.env.PREVIEW_DATABASE_URL;
  const options: PlanOptions = { mainDatabase: process.env.TURSO_MAIN_DB || "petstore", turso, group: process.env.TURSO_GROUP || undefined, outdir: values.outdir! };
  const names = previewNames(branch);
  console.log(`branch ${JSON.stringify(branch)} → Worker ${names.worker}, database ${names.database}`);

  if (values.destroy) {
    const steps = destroyPlan(branch, options);
    if (values["dry-run"]) {
      for (const step of steps) console.log(`$ ${formatStep(step)}`);
      return 0;
    }
    for (const step of steps) run(step, { allowFailure: true });
    return 0;
  }

  if (turso && !tursoReady && !values["dry-run"]) {
    console.error("No database for the preview: install the Turso CLI and set TURSO_API_TOKEN (database branch), or set PREVIEW_DATABASE_URL.");
    return 2;
  }
  if (values["dry-run"]) {
    const { steps, build } = previewPlan(branch, options);
    const how = !turso
      ? "shared preview database (PREVIEW_DATABASE_URL)"
      : tursoReady
        ? "database branch with the Turso CLI"
        : "database branch with the Turso CLI (not usable here: a real run needs `turso` and TURSO_API_TOKEN)";
    console.log(`dry run, ${how}; would run:`);
    for (const step of steps) console.log(`$ ${formatStep(step)}`);
    console.log("building the bundle:");
    buildAssets(); // wrangler refuses a missing [assets] directory
    return run(build, { allowFailure: true }).status;
  }
  deploy(branch, options);
  return 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  try {
    process.exit(main(process.argv.slice(2)));
  } catch (error) {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  }
}
