/**
 * Names of preview deployments (docs/deployment.md#previews-one-per-branch): one slug rule for the Worker and
 * the database of a git branch, and the guard that keeps a preview from ever
 * being named like — and so deploying over or deleting — production.
 */
import { createHash } from "node:crypto";

/** Every preview Worker and database name starts with this. */
export const PREVIEW_PREFIX = "petstore-";
/** The production Worker: wrangler.toml's top-level `name`. */
export const PRODUCTION_WORKER = "petstore";
/** The production database when TURSO_MAIN_DB is not set. */
export const DEFAULT_MAIN_DATABASE = "petstore";
/**
 * Cloudflare Worker names: lowercase a-z, 0-9 and `-`, at most 63 characters
 * (the name is the first DNS label of `<name>.<subdomain>.workers.dev`, RFC 1035 §2.3.4).
 */
export const WORKER_NAME_MAX = 63;
/**
 * Turso database names: lowercase a-z, 0-9 and `-`. Kept to 32 characters
 * (conservative: Turso builds the host `<db>-<org>.<region>.turso.io`, whose
 * first label `<db>-<org>` must stay within the 63 of a DNS label).
 */
export const DATABASE_NAME_MAX = 32;

export interface PreviewNames {
  /** The branch reduced to lowercase a-z0-9 words joined by `-` (may be empty). */
  slug: string;
  worker: string;
  database: string;
}

/** `prefix + slug`, shortened with a stable hash of the branch when longer than `max`. */
function fitName(slug: string, branch: string, max: number): string {
  const hash = createHash("sha256").update(branch).digest("hex").slice(0, 6);
  if (!slug) return `${PREVIEW_PREFIX}branch-${hash}`;
  const name = `${PREVIEW_PREFIX}${slug}`;
  if (name.length <= max) return name;
  const room = max - PREVIEW_PREFIX.length - hash.length - 1;
  return `${PREVIEW_PREFIX}${slug.slice(0, room).replace(/-+$/, "")}-${hash}`;
}

/**
 * Names for a branch: `feature/Add_Cats!!` → Worker and database
 * `petstore-feature-add-cats`. Accents are folded (`café` → `cafe`); a name
 * too long for its limit is cut and ends with 6 hex digits of SHA-256(branch),
 * so two long branches with the same start still get different names.
 * Pure: does not check the names against production (see `assertPreviewNames`).
 */
export function previewNames(branch: string): PreviewNames {
  const slug = branch
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "");
  return { slug, worker: fitName(slug, branch, WORKER_NAME_MAX), database: fitName(slug, branch, DATABASE_NAME_MAX) };
}

/**
 * Names a preview may never take: the production Worker, the production
 * database (`petstore`) and the main database named by TURSO_MAIN_DB.
 * @param mainDatabase TURSO_MAIN_DB (empty or undefined: the default).
 */
export function protectedNames(mainDatabase: string | undefined): Set<string> {
  return new Set([PRODUCTION_WORKER, DEFAULT_MAIN_DATABASE, mainDatabase || DEFAULT_MAIN_DATABASE]);
}

/**
 * Is `name` one a preview can have: the preview prefix, a valid name, and not protected?
 * Used before every create, deploy and delete, and to pick prune candidates.
 */
export function isPreviewName(name: string, forbidden: Set<string>): boolean {
  return name.startsWith(PREVIEW_PREFIX) && /^[a-z0-9]+(?:-[a-z0-9]+)*$/.test(name) && !forbidden.has(name);
}

/**
 * The names of `branch`'s preview, or an Error when either would touch production.
 * @throws Error naming the refused name (e.g. branch `main` with TURSO_MAIN_DB=petstore-main).
 */
export function assertPreviewNames(branch: string, mainDatabase: string | undefined): PreviewNames {
  const names = previewNames(branch);
  const forbidden = protectedNames(mainDatabase);
  for (const name of [names.worker, names.database]) {
    if (!isPreviewName(name, forbidden)) {
      throw new Error(`refusing preview name ${name} for branch ${JSON.stringify(branch)}: it is the production Worker's or a production database's name`);
    }
  }
  return names;
}
