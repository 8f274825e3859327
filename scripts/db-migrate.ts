/**
 * `npm run db:migrate`: apply the committed Drizzle migrations (drizzle/) to
 * the database at DATABASE_URL — a libSQL server (`http(s)://`, `libsql://`,
 * with DATABASE_AUTH_TOKEN for Turso) or an embedded `file:` database.
 * Idempotent: migrations already applied are skipped. Used by deployments
 * (.github/workflows/deploy.yml, scripts/preview.ts); `npm start` migrates its
 * own file database on start.
 */
import { openLocalDatabase } from "../src/db/local";
import { migrateServer } from "./sqld";

const url = process.env.DATABASE_URL;
if (!url) {
  console.error("DATABASE_URL is required (e.g. libsql://<db>-<org>.turso.io, with DATABASE_AUTH_TOKEN).");
  process.exit(2);
}
if (url.startsWith("file:")) {
  (await openLocalDatabase(url)).$client.close();
} else {
  await migrateServer(url, process.env.DATABASE_AUTH_TOKEN || undefined);
}
console.log(`migrations applied to ${new URL(url).host || url}`);
