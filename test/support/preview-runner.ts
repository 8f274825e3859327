/**
 * Runs scripts/preview.ts for the preview tests as `npm run preview` runs it,
 * in a child process with a sandboxed home: `usePreviewRunner()` makes the
 * sandbox for the test file (removed afterwards) and returns `runPreview`.
 * Also the branch the tests deploy and the names derived from it.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll } from "vitest";
import { type Run, runScript } from "./run-script";

/** The production database of the fake Turso organisation. */
export const MAIN_DB = "petstore-main";
/** The branch the tests preview, and the Worker (and database) name derived from it. */
export const BRANCH = "feature/Add_Cats!!";
export const WORKER = "petstore-feature-add-cats";

export type { Run } from "./run-script";

/**
 * Make a sandbox (wrangler's home, config and logs) for this test file, removed
 * after it, and return `runPreview(args, env)`: the script with no inherited
 * Cloudflare, Turso, database or wrangler settings, and `env` added.
 */
export function usePreviewRunner(): (args: string[], env?: Record<string, string>) => Promise<Run> {
  let sandbox: string;
  beforeAll(() => {
    sandbox = mkdtempSync(join(tmpdir(), "petstore-preview-test-"));
    mkdirSync(join(sandbox, "home"));
  });
  afterAll(() => {
    rmSync(sandbox, { recursive: true, force: true });
  });
  return (args, env = {}) => runPreviewIn(sandbox, args, env);
}

/** `node --import tsx scripts/preview.ts …` in `sandbox`, with `env` added. */
function runPreviewIn(sandbox: string, args: string[], env: Record<string, string>): Promise<Run> {
  return runScript("scripts/preview.ts", args, {
    dropped: /^(CLOUDFLARE_|TURSO_|DATABASE_|PREVIEW_|WRANGLER_|CF_|CORPORA_)/,
    env: {
      HOME: join(sandbox, "home"),
      XDG_CONFIG_HOME: join(sandbox, "home", ".config"),
      WRANGLER_LOG_PATH: join(sandbox, "wrangler-logs"),
      WRANGLER_SEND_METRICS: "false",
      ...env,
    },
    timeoutMs: 150_000,
  });
}
