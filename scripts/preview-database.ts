/**
 * Preview databases on Turso through its Platform API, with the official
 * client `@tursodatabase/api` (https://docs.turso.tech/api-reference): created
 * empty (never a branch or copy of production), then migrated and seeded from
 * the public corpora; each gets its own expiring token, scoped to it.
 *
 * Environment: TURSO_API_TOKEN (Platform API token), TURSO_ORG (organisation
 * slug), TURSO_GROUP (group of preview databases, default `default`),
 * TURSO_API_BASE_URL (default https://api.turso.tech/v1/; tests point it at a
 * local fake), PREVIEW_TOKEN_EXPIRATION (default `30d`, Turso's duration format).
 */
import { createClient as createLibsqlClient } from "@libsql/client";
import { createClient } from "@tursodatabase/api";
import { migrateServer } from "./sqld";
import { seedCatalogue, type SeedReport } from "./seed";

/** The official Platform API client (its class is not exported by name). */
export type TursoClient = ReturnType<typeof createClient>;

export const TURSO_API_DEFAULT_BASE_URL = "https://api.turso.tech/v1/";

export interface TursoSettings {
  token: string;
  org: string;
  group: string;
  /** Platform API base URL, ending in `/` (the client resolves paths against it). */
  baseUrl: string;
  tokenExpiration: string;
}

/**
 * Settings from the environment.
 * @throws Error naming each missing variable.
 */
export function tursoSettings(env: NodeJS.ProcessEnv): TursoSettings {
  const missing = ["TURSO_API_TOKEN", "TURSO_ORG"].filter((name) => !env[name]);
  if (missing.length > 0) throw new Error(`missing ${missing.join(", ")} (Turso Platform API)`);
  const base = env.TURSO_API_BASE_URL || TURSO_API_DEFAULT_BASE_URL;
  return {
    token: env.TURSO_API_TOKEN!,
    org: env.TURSO_ORG!,
    group: env.TURSO_GROUP || "default",
    baseUrl: base.endsWith("/") ? base : `${base}/`,
    tokenExpiration: env.PREVIEW_TOKEN_EXPIRATION || "30d",
  };
}

/** The official client on `settings.baseUrl`. */
export function tursoClient(settings: TursoSettings): TursoClient {
  return createClient({ org: settings.org, token: settings.token, baseUrl: settings.baseUrl });
}

/**
 * The libSQL URL of a database host: `libsql://<hostname>` (TLS). A Platform
 * API reached over plain `http:` is a local stand-in, whose databases are
 * plain-HTTP libSQL servers too: then `http://<hostname>`.
 */
export function databaseUrl(hostname: string, settings: Pick<TursoSettings, "baseUrl">): string {
  return new URL(settings.baseUrl).protocol === "http:" ? `http://${hostname}` : `libsql://${hostname}`;
}

/**
 * A Platform API 404. The client throws a `TursoClientError` with the HTTP
 * `status`; its typings export that class but @tursodatabase/api 2.0.5's
 * module does not, so it is recognised by name.
 */
function isNotFound(error: unknown): boolean {
  return error instanceof Error && error.name === "TursoClientError" && (error as Error & { status?: number }).status === 404;
}

export interface PreviewDatabase {
  url: string;
  /** Database token: full access to this database only, expiring after `tokenExpiration`. */
  token: string;
  created: boolean;
  seed: SeedReport;
}

/**
 * Make the preview database `name` ready: create it empty in the preview group
 * when absent (a second deploy of the branch reuses it), mint its token, apply
 * the migrations and seed the catalogue from `corporaDir` (both idempotent).
 * @throws Error (`TursoClientError`, with `status`) from the Platform API; Error when migration or seeding fails.
 */
export async function preparePreviewDatabase(client: TursoClient, settings: TursoSettings, name: string, corporaDir: string): Promise<PreviewDatabase> {
  let hostname: string;
  let created = false;
  try {
    hostname = (await client.databases.get(name)).hostname;
  } catch (error) {
    if (!isNotFound(error)) throw error;
    // No `seed` option: the database starts empty, never from another database.
    hostname = (await client.databases.create(name, { group: settings.group })).hostname;
    created = true;
  }
  const url = databaseUrl(hostname, settings);
  const { jwt: token } = await client.databases.createToken(name, { expiration: settings.tokenExpiration, authorization: "full-access" });
  await migrateServer(url, token);
  const libsql = createLibsqlClient({ url, authToken: token });
  try {
    const seed = await seedCatalogue(libsql, corporaDir, new Date());
    return { url, token, created, seed };
  } finally {
    libsql.close();
  }
}

/**
 * Delete database `name`. Absent already: false (nothing to do).
 * @throws Error (`TursoClientError`) for any other failure (e.g. delete protection, auth).
 */
export async function deletePreviewDatabase(client: TursoClient, name: string): Promise<boolean> {
  try {
    await client.databases.delete(name);
    return true;
  } catch (error) {
    if (isNotFound(error)) return false;
    throw error;
  }
}

/** Names of the databases of the preview group. */
export async function listDatabases(client: TursoClient, settings: TursoSettings): Promise<string[]> {
  return (await client.databases.list({ group: settings.group })).map((db) => db.name);
}
