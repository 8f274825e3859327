/**
 * `npm run keys:create -- --role staff [--name ops]`: print one new API key of
 * the operator account `name` (created on first use) in the database at
 * DATABASE_URL (default `file:.data/petstore.db`; `http(s)://` or `libsql://`
 * URLs reach a libSQL server, with DATABASE_AUTH_TOKEN; DATABASE_SYNC_URL makes
 * the file a replica), opened like the server opens it (src/db/open.ts). The secret is printed
 * once to stdout and stored only as a hash.
 */
import { parseArgs } from "node:util";
import { databaseSettings, openDatabase } from "../src/db/open";
import { ROLES, type Role } from "../src/db/schema";
import { createOperatorKey } from "../src/services/accounts.service";

const { values } = parseArgs({ options: { role: { type: "string", default: "staff" }, name: { type: "string", default: "ops" } } });
const role = values.role as Role;
if (!ROLES.includes(role)) {
  console.error(`--role must be one of ${ROLES.join(", ")}`);
  process.exit(2);
}
const opened = await openDatabase(databaseSettings(process.env));
const { db } = opened;
try {
  const { account, apiKey } = await createOperatorKey(db, role, values.name!, new Date());
  console.error(`New ${role} key "${apiKey.name}" (id ${apiKey.id}) of account ${account.id} <${account.email}>:`);
  console.log(apiKey.key);
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
} finally {
  await opened.close();
}
