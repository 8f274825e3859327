/**
 * `npm run db:migrate`: apply the committed Drizzle migrations (drizzle/) to
 * the database at DATABASE_URL — a libSQL server (`http(s)://`, `libsql://`,
 * with DATABASE_AUTH_TOKEN for Turso), an embedded `file:` database, or the
 * primary of a replica (DATABASE_SYNC_URL); opened by `openDatabase`
 * (src/db/open.ts).
 * Idempotent: migrations already applied are skipped. Used by deployments
 * (.github/workflows/deploy.yml, scripts/preview.ts); `npm start` migrates its
 * own file database on start.
 */
import { databaseSettings, openDatabase } from "../src/db/open";

if (!process.env.DATABASE_URL) {
  console.error("DATABASE_URL is required (e.g. libsql://<db>-<org>.turso.io, with DATABASE_AUTH_TOKEN).");
  process.exit(2);
}
// Opening migrates (a replica's primary for DATABASE_SYNC_URL), once even when several processes run it.
const opened = await openDatabase(databaseSettings(process.env));
await opened.close();
console.log(`${opened.migrationsApplied} migration(s) applied to ${opened.displayUrl}`);
