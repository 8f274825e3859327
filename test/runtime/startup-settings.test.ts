/**
 * Start-up settings that used to fail with someone else's message:
 * `openDatabase({ url: ":memory:" })` (the URL was read as the file `ry:`),
 * and `PORT=abc` (Node's own "options.port" error instead of naming PORT like
 * every other setting); and a start with several bad variables, which named
 * only the first one its module read.
 */
import { spawn } from "node:child_process";
import { availableParallelism } from "node:os";
import { describe, expect, it } from "vitest";
import { serverBundle } from "../support/server-bundle";
import { nodeSettings, parseConfig, workerSettings } from "../../src/config";

const listenSettings = (env: Record<string, string>) => nodeSettings(env).listen;
import { openDatabase } from "../../src/db/driver/open";
import { categories } from "../../src/db/schema";
import { queries } from "../support/database";
import { REPO_ROOT } from "../support/server-process";

describe('openDatabase({ url: ":memory:" })', () => {
  it("opens a migrated in-memory database that reads its own writes", async () => {
    const opened = await openDatabase({ url: ":memory:", syncIntervalSeconds: 5, lockWaitMs: 5000, requestTimeoutMs: 10_000 });
    try {
      expect(opened.migrationsApplied).toBeGreaterThan(0);
      await queries(opened.db).insert(categories).values({ name: "Memory", nameKey: "memory" });
      expect((await queries(opened.db).select({ name: categories.name }).from(categories)).map((r) => r.name)).toEqual(["Memory"]);
      await opened.check();
    } finally {
      await opened.close();
    }
  });
});

describe("REQUEST_TIMEOUT_MS and MAX_UNFINISHED_PER_ADDRESS", () => {
  it("take their ranges, and a bad value names the variable", () => {
    expect(listenSettings({ REQUEST_TIMEOUT_MS: "1000", MAX_UNFINISHED_PER_ADDRESS: "0" })).toMatchObject({
      requestTimeoutMs: 1000,
      maxUnfinishedPerAddress: 0,
    });
    for (const bad of ["999", "300001", "1.5", "soon"]) {
      expect(() => listenSettings({ REQUEST_TIMEOUT_MS: bad }), bad).toThrow(/^Invalid configuration: REQUEST_TIMEOUT_MS: /);
    }
    for (const bad of ["-1", "100001", "many"]) {
      expect(() => listenSettings({ MAX_UNFINISHED_PER_ADDRESS: bad }), bad).toThrow(/^Invalid configuration: MAX_UNFINISHED_PER_ADDRESS: /);
    }
  });
});

describe("PORT", () => {
  it("defaults to 8787, takes 0..65535, and a bad value names PORT", () => {
    expect(listenSettings({})).toEqual({ hostname: "127.0.0.1", port: 8787, requestTimeoutMs: 30_000, maxUnfinishedPerAddress: 64 });
    expect(listenSettings({ PORT: "0", HOST: "0.0.0.0" })).toMatchObject({ hostname: "0.0.0.0", port: 0 });
    expect(listenSettings({ PORT: "65535" }).port).toBe(65535);
    for (const bad of ["abc", "-1", "65536", "80.5", "8o80"]) expect(() => listenSettings({ PORT: bad }), bad).toThrow(/^Invalid configuration: PORT: /);
  });

  it("npm start with PORT=abc exits 1 with one line naming PORT", async () => {
    const { code, stderr } = await start({ PORT: "abc" });
    expect(code).toBe(1);
    expect(stderr.trim().split("\n"), stderr).toEqual(['Invalid configuration: PORT: must be an integer from 0 to 65535, not "abc"']);
  });
});

describe("a start with several bad variables", () => {
  const env = { RATE_LIMIT_ANON_PER_MIN: "0", PORT: "abc", DATABASE_LOCK_TIMEOUT_MS: "-5", TRUST_PROXY: "yes", WEB_CONCURRENCY: "many" };
  const message =
    'Invalid configuration: RATE_LIMIT_ANON_PER_MIN: must be an integer ≥ 1, not "0"; DATABASE_LOCK_TIMEOUT_MS: must be an integer ≥ 0, not "-5"; ' +
    'PORT: must be an integer from 0 to 65535, not "abc"; WEB_CONCURRENCY: must be a whole number ≥ 1 or "auto", not "many"; ' +
    'TRUST_PROXY: must be false, true or a number of proxies (0-99), not "yes"';

  it("nodeSettings names every one of them in one error, in one format", () => {
    expect(() => nodeSettings(env)).toThrow(message);
  });

  it("npm start exits 1 with one line naming them all", async () => {
    const { code, stderr } = await start(env);
    expect(code).toBe(1);
    expect(stderr.trim().split("\n"), stderr).toEqual([message]);
  });
});

describe("settings that were accepted silently (issue 54)", () => {
  const cores = availableParallelism();

  it("a retry cap below the retry base names WEBHOOK_RETRY_CAP_MS, on every runtime", () => {
    const message = 'Invalid configuration: WEBHOOK_RETRY_CAP_MS: must be at least WEBHOOK_RETRY_BASE_MS (60000 ms), not "1000"';
    const env = { WEBHOOK_RETRY_BASE_MS: "60000", WEBHOOK_RETRY_CAP_MS: "1000" };
    for (const settings of [nodeSettings, workerSettings, parseConfig]) expect(() => settings(env)).toThrow(message);
    expect(() => parseConfig({ WEBHOOK_RETRY_BASE_MS: "7200000" })).toThrow(
      "WEBHOOK_RETRY_CAP_MS: must be at least WEBHOOK_RETRY_BASE_MS (7200000 ms), not its default",
    );
    expect(parseConfig({ WEBHOOK_RETRY_BASE_MS: "5000", WEBHOOK_RETRY_CAP_MS: "5000" }).webhooks).toMatchObject({ retryBaseMs: 5000, retryCapMs: 5000 });
  });

  it("OTEL_TRACES_SAMPLER takes the samplers the SDK implements, and names itself otherwise", () => {
    for (const sampler of ["always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"])
      expect(() => nodeSettings({ OTEL_TRACES_SAMPLER: sampler }), sampler).not.toThrow();
    for (const bad of ["sometimes", "AlwaysOn", "xray"])
      expect(() => nodeSettings({ OTEL_TRACES_SAMPLER: bad }), bad).toThrow(/^Invalid configuration: OTEL_TRACES_SAMPLER: must be one of always_on, .*, not "/);
  });

  it(`WEB_CONCURRENCY takes at most ${2 * cores} processes here (2 per core)`, () => {
    expect(nodeSettings({ WEB_CONCURRENCY: String(2 * cores) }).processes).toBe(2 * cores);
    for (const bad of [String(2 * cores + 1), "500"])
      expect(() => nodeSettings({ WEB_CONCURRENCY: bad }), bad).toThrow(
        `Invalid configuration: WEB_CONCURRENCY: must be at most ${2 * cores} (2 per core, ${cores} cores), not "${bad}"`,
      );
  });

  it("npm start with all three exits 1 with one line naming each variable", async () => {
    const env = { WEBHOOK_RETRY_CAP_MS: "1000", OTEL_TRACES_SAMPLER: "sometimes", WEB_CONCURRENCY: String(2 * cores + 1), PORT: "0" };
    const { code, stderr } = await start(env);
    expect(code).toBe(1);
    const lines = stderr.trim().split("\n");
    expect(lines, stderr).toHaveLength(1);
    for (const name of ["WEBHOOK_RETRY_CAP_MS", "OTEL_TRACES_SAMPLER", "WEB_CONCURRENCY"]) expect(lines[0]).toContain(`${name}: must be`);
  });
});

/** Run the Node entry (`npm start`'s script) on an in-memory database with `env` added; its exit code and stderr. */
async function start(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [serverBundle()], {
    cwd: REPO_ROOT,
    env: { ...process.env, DATABASE_URL: ":memory:", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  return { code, stderr };
}
