/** A fresh staff key in a test database, made the way operators make one (`keys:create`). */
import type { Database } from "../../src/db/client";
import { createOperatorKey } from "../../src/services/accounts.service";

/** Create (or reuse) the "tests" staff account and return a new key's secret. */
export async function createStaffKeyFor(db: Database): Promise<string> {
  return (await createOperatorKey(db, "staff", "tests", new Date())).apiKey.key;
}
