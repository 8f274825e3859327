/**
 * `npm run dev:worker` (scripts/dev-worker.ts) run for real on a temp sqld
 * data directory and free ports: wrangler dev starts without a warning about
 * the DATABASE_AUTH_TOKEN secret (the local sqld needs none), the Worker
 * answers, and each request is logged once (the Worker's JSON line; wrangler's
 * own request line is dropped). SIGTERM stops wrangler and sqld.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isWranglerRequestLine } from "../../scripts/dev-worker";
import { freePort, ROOT } from "../../scripts/sqld";

describe("isWranglerRequestLine", () => {
  it("matches wrangler's request lines, coloured or not, and nothing else", () => {
    expect(isWranglerRequestLine("[wrangler:info] GET /pets 200 OK (12ms)")).toBe(true);
    expect(isWranglerRequestLine("[wrangler:info] POST /store/orders?x=1 409 Conflict (3ms)")).toBe(true);
    expect(isWranglerRequestLine("\u001b[2m[wrangler:info]\u001b[22m GET /health \u001b[32m200\u001b[39m OK (4ms)")).toBe(true);
    expect(isWranglerRequestLine("[wrangler:info] Ready on http://127.0.0.1:8787")).toBe(false);
    expect(isWranglerRequestLine('{"level":"info","msg":"request","method":"GET","route":"/pets","status":200}')).toBe(false);
    expect(isWranglerRequestLine("✘ [ERROR] GET /pets 500")).toBe(false);
  });
});

describe("npm run dev:worker", () => {
  let child: ChildProcess;
  let dataDir: string;
  let origin: string;
  let output = "";

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "petstore-dev-worker-"));
    const port = await freePort();
    origin = `http://127.0.0.1:${port}`;
    child = spawn(process.execPath, ["--import", "tsx", "scripts/dev-worker.ts"], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "pipe"],
      env: {
        ...process.env,
        SQLD_DATA_DIR: dataDir,
        SQLD_PORT: String(await freePort()),
        PORT: String(port),
        NO_COLOR: "1",
        WRANGLER_SEND_METRICS: "false",
        DATABASE_AUTH_TOKEN: undefined,
      },
    });
    child.stdout?.on("data", (chunk) => {
      output += chunk;
    });
    child.stderr?.on("data", (chunk) => {
      output += chunk;
    });
    const started = Date.now();
    while (!output.includes("Ready on")) {
      if (child.exitCode !== null) throw new Error(`dev:worker exited ${child.exitCode}:\n${output}`);
      if (Date.now() - started > 60_000) throw new Error(`dev:worker not ready after 60 s:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }, 90_000);

  afterAll(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    }
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }, 30_000);

  it("starts without a missing-secret warning for the local sqld", () => {
    expect(output).not.toMatch(/Missing required secrets/);
  });

  it("logs each request once: the Worker's JSON line, not wrangler's", async () => {
    const ids: string[] = [];
    for (const path of ["/health", "/pets?limit=1", "/no-such-route"]) {
      const id = `dev-worker-test-${crypto.randomUUID()}`;
      const res = await fetch(`${origin}${path}`, { headers: { "X-Request-Id": id } });
      await res.body?.cancel();
      ids.push(id);
    }
    const deadline = Date.now() + 10_000;
    while (!ids.every((id) => output.includes(id)) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    // wrangler wrote its own request line right after the Worker's: give it time to arrive.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const lines = output.split("\n");
    for (const id of ids)
      expect(
        lines.filter((line) => line.includes(id)),
        id,
      ).toHaveLength(1);
    expect(lines.filter((line) => /\[wrangler:info\] [A-Z]+ \//.test(line))).toEqual([]);
  });
});
