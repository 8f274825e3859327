/**
 * The Node target: `createApp` over a fresh temp-file libSQL database, called
 * in-process with `app.request` (no server).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createApp, type AppDeps } from "../../src/app";
import { parseConfig } from "../../src/config";
import { dispatchDue } from "../../src/services/webhooks/dispatch";

import { openTestDatabase, type TestDatabase } from "./database";
import { nodeAssets } from "../../src/runtime/node/assets";
import { createStaffKeyFor } from "./staff-key";
import type { Target } from "./target";

export interface NodeTarget extends Target {
  db: TestDatabase;
  app: ReturnType<typeof createApp>;
}

/** Limits raised so that scenarios are never rate limited unless they ask. */
export const TEST_ENV: Record<string, string> = {
  RATE_LIMIT_ANON_PER_MIN: "100000",
  RATE_LIMIT_KEY_PER_MIN: "100000",
  RATE_LIMIT_SIGNUP_PER_HOUR: "100000",
  WEBHOOKS_ALLOW_PRIVATE: "true",
  // Quiet test output: request lines are info; errors still show.
  LOG_LEVEL: "warn",
};

/** A fresh app on a fresh temp-file database; `env` overrides configuration variables. */
export async function nodeTarget(env: Record<string, string> = {}, deps: Partial<AppDeps> = {}): Promise<NodeTarget> {
  const dir = mkdtempSync(join(tmpdir(), "petstore-test-"));
  const db = await openTestDatabase(`file:${join(dir, "test.db")}`);
  const config = parseConfig({ ...TEST_ENV, ...env });
  const app = createApp({ db, config, log: () => {}, assets: nodeAssets(), ...deps });
  return {
    name: "node",
    db,
    app,
    staffKey: await createStaffKeyFor(db),
    fetch: async (path, init) => app.request(`http://localhost${path}`, init),
    dispatch: async () => {
      await dispatchDue(db, { config, now: deps.clock ?? (() => new Date()), fetch: (input, init) => fetch(input, init) });
    },
    close: async () => {
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
