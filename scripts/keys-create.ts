/**
 * `npm run keys:create -- --role staff [--name ops]`: print one new API key of
 * the operator account `name` (created on first use) in the database at
 * DATABASE_URL (default `file:.data/petstore.db`; `http(s)://` or `libsql://`
 * URLs reach a libSQL server, with DATABASE_AUTH_TOKEN; DATABASE_SYNC_URL makes
 * the file a replica), opened like the server opens it (src/db/driver/open.ts). The
 * secret is printed once to stdout and stored only as a hash. `--help` prints
 * the usage (exit 0); no `--role`, an unknown option or a bad value is a usage
 * error (exit 2, nothing created).
 */
import { parseArgs } from "node:util";
import { nodeSettings } from "../src/config";
import { openDatabase } from "../src/db/driver/open";
import { ROLES, type Role } from "../src/domain/principal";
import { createOperatorKey } from "../src/services/accounts.service";

const USAGE = `Usage: npm run keys:create -- --role <staff|customer> [--name <name>]

Prints one new API key (stdout, once; only its hash is stored) of the operator
account <name> (default "ops"; created on first use) with that role.

  --role <role>   staff or customer (required)
  --name <name>   operator account name (default: ops)
  -h, --help      show this help

Database: DATABASE_URL (default file:.data/petstore.db; http(s):// or libsql://
with DATABASE_AUTH_TOKEN for a libSQL server; DATABASE_SYNC_URL makes a file an
embedded replica of that server).`;

/** Exit 2 with one line naming the problem, then the usage. */
function usageError(problem: string): never {
  console.error(`keys:create: ${problem}\n\n${USAGE}`);
  process.exit(2);
}

let values: { role?: string; name?: string; help?: boolean };
try {
  ({ values } = parseArgs({
    options: { role: { type: "string" }, name: { type: "string", default: "ops" }, help: { type: "boolean", short: "h" } },
    allowPositionals: false,
  }));
} catch (error) {
  usageError(error instanceof Error ? error.message : String(error));
}
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
if (values.role === undefined) usageError("--role is required.");
const role = values.role as Role;
if (!ROLES.includes(role)) usageError(`--role must be one of ${ROLES.join(", ")}.`);
if (!values.name?.trim()) usageError("--name must not be empty.");
const opened = await openDatabase(nodeSettings(process.env).database);
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
