/**
 * `npm run db:migrate`: apply the committed Drizzle migrations (drizzle/) to
 * the database at DATABASE_URL — a libSQL server (`http(s)://`, `libsql://`,
 * with DATABASE_AUTH_TOKEN for Turso), an embedded `file:` database, or the
 * primary of a replica (DATABASE_SYNC_URL); opened by `openDatabase`
 * (src/db/driver/open.ts).
 * Idempotent: migrations already applied are skipped. Used by deployments
 * (.github/workflows/deploy.yml, scripts/preview.ts); `npm start` migrates its
 * own file database on start.
 */
import { nodeSettings } from "../src/config";
import { openDatabase } from "../src/db/driver/open";

if (!process.env.DATABASE_URL) {
  console.error("DATABASE_URL is required (e.g. libsql://<db>-<org>.turso.io, with DATABASE_AUTH_TOKEN).");
  process.exit(2);
}
// Opening migrates (a replica's primary for DATABASE_SYNC_URL), once even when several processes run it.
// A migration's statement may rebuild a large table: on a libSQL server each request may take up to
// 10 minutes here (the server's default is 10 s), unless DATABASE_REQUEST_TIMEOUT_MS says otherwise.
const opened = await openDatabase(nodeSettings({ DATABASE_REQUEST_TIMEOUT_MS: String(10 * 60_000), ...process.env }).database);
await opened.close();
console.log(`${opened.migrationsApplied} migration(s) applied to ${opened.displayUrl}`);
