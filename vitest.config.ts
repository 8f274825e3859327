import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

// wrangler, wherever the tests run it (the Worker suite, `wrangler deploy --dry-run` of
// the tooling tests), writes its log file inside the repository (.wrangler/ is ignored),
// not in ~/.config/.wrangler/logs: child processes inherit this.
process.env.WRANGLER_LOG_PATH ??= fileURLToPath(new URL(".wrangler/logs", import.meta.url));
// Nor does it send usage metrics, nor keep its global config (metrics.json, written even when it sends none) in the home folder:
// that goes under .wrangler/ too (wrangler finds it by XDG_CONFIG_HOME).
process.env.WRANGLER_SEND_METRICS ??= "false";
process.env.XDG_CONFIG_HOME = fileURLToPath(new URL(".wrangler/config", import.meta.url));

/**
 * Four projects in one run (`npm test`):
 * - "node" and "resources" (group 0, side by side, MAX_WORKERS files at a
 *   time): everything under test/ except test/worker and ALONE — the Node app
 *   in-process over embedded libSQL files, the server as a child process,
 *   tooling tests; "resources" is test/resources, without isolation (SHARED);
 * - "worker" (group 1): test/worker — the same scenarios against the real
 *   Worker entry under workerd + sqld, started once per run by
 *   test/worker/global-setup.ts (only when a worker test file is selected),
 *   one file at a time;
 * - "node-alone" (group 2): the files of ALONE, one at a time, last.
 * Run one side: `npm test -- --project node` / `--project worker`.
 */
/** Node test files that run alone (the vitest project "node-alone"). */
const ALONE = ["test/properties/multi-process.test.ts", "test/tooling/sqld-contention.test.ts"];
/**
 * Files that share their test process with the files run before them in it
 * (`isolate: false`): each imports the app once per process instead of once
 * per file, which was most of their time. They share no state: each makes its
 * own app over its own database, and restores what it spies on.
 */
const SHARED = ["test/resources/**/*.test.ts"];
/**
 * Test files at a time in the node projects. Most files wait on child
 * processes, sockets and timers: one at a time (vitest's default on two
 * cores, cores - 1) used 0.6 of a core.
 */
const MAX_WORKERS = 3;
/** Builds the `npm start` bundle the Node server tests start, once per run (test/support/server-bundle.ts). */
const NODE_SETUP = "test/support/node-global-setup.ts";

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    reporters: ["default", "./test/support/summary-reporter.ts"],
    projects: [
      {
        extends: true,
        test: {
          name: "node",
          include: ["test/**/*.test.ts"],
          exclude: ["test/worker/**", ...SHARED, ...ALONE, "**/node_modules/**"],
          globalSetup: [NODE_SETUP],
          maxWorkers: MAX_WORKERS,
        },
      },
      {
        extends: true,
        // The same group as "node" (groupOrder 0, the same maxWorkers): their
        // files run side by side.
        test: { name: "resources", include: SHARED, globalSetup: [NODE_SETUP], maxWorkers: MAX_WORKERS, isolate: false },
      },
      {
        extends: true,
        // Alone, after the others: several processes on one sqld. sqld lets
        // writers wait for its write lock on spinning threads; with other test
        // files taking both cores, the lock holder starved and these timed out.
        test: { name: "node-alone", include: ALONE, globalSetup: [NODE_SETUP], fileParallelism: false, sequence: { groupOrder: 2 } },
      },
      {
        extends: true,
        test: {
          name: "worker",
          include: ["test/worker/**/*.test.ts"],
          globalSetup: ["test/worker/global-setup.ts"],
          // One Worker and one database serve every file: files run one at a
          // time (edge-cache assertions must not see another file's purges),
          // after the node project (a separate group, as vitest requires for a
          // different worker count).
          fileParallelism: false,
          // The files import their scenarios and the client once per run,
          // not once per file (a third of this project's time): they hold
          // nothing but HTTP clients of the shared Worker.
          isolate: false,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
