/**
 * Every npm script that starts servers stops as a whole when only npm's own
 * pid gets SIGTERM or SIGINT (what a process manager or a script sends; not
 * the terminal's process group): `npm run dev:worker` (scripts/with-node.mjs,
 * tsx, dev-worker.ts, wrangler, workerd, sqld) and `npm run start:dev` (tsx
 * watch and the server). After the signal every process of the tree exits and
 * every port it listened on is free. (`npm start`: test/runtime/npm-start-signals.test.ts;
 * `npm run preview` serves nothing: it deploys.)
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freePort, ROOT } from "../../scripts/sqld";
import { alive, descendantsOf, killedAfterEach, portIsFree } from "../support/processes";

const dir = mkdtempSync(join(tmpdir(), "petstore-npm-signals-"));
const { started, tree } = killedAfterEach();
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Resolves once `output()` matches `pattern`; rejects when npm exits first or after 90 s. */
async function waitFor(npm: ChildProcess, output: () => string, pattern: RegExp): Promise<void> {
  const deadline = Date.now() + 90_000;
  while (!pattern.test(output())) {
    if (npm.exitCode !== null || npm.signalCode !== null) throw new Error(`npm exited before ${pattern}:\n${output()}`);
    if (Date.now() > deadline) throw new Error(`no ${pattern} within 90 s:\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The pids of `pids` still alive once every one has exited or 30 s have passed. */
async function survivors(pids: number[]): Promise<number[]> {
  const deadline = Date.now() + 30_000;
  while (pids.some(alive) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
  return pids.filter(alive);
}

/** The command line of `pid`, for a failure message. */
function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").slice(0, 160);
  } catch {
    return "(gone)";
  }
}

const scripts = {
  "dev:worker": { ready: /Ready on http/, env: async () => ({ SQLD_DATA_DIR: join(dir, `sqld-${crypto.randomUUID()}`), SQLD_PORT: String(await freePort()) }) },
  "start:dev": { ready: /listening on http/, env: async () => ({ DATABASE_URL: `file:${join(dir, `${crypto.randomUUID()}.db`)}` }) },
} as const;

describe("npm scripts that start servers, signalled through npm's own pid only", { timeout: 180_000 }, () => {
  it.each([
    ["dev:worker", "SIGTERM"],
    ["dev:worker", "SIGINT"],
    ["start:dev", "SIGTERM"],
    ["start:dev", "SIGINT"],
  ] as const)("npm run %s, %s: every process of the tree exits and its ports are free", async (script, signal) => {
    const port = await freePort();
    const extra = await scripts[script].env();
    const npm = spawn("npm", ["run", script], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, ...extra, HOST: "127.0.0.1", PORT: String(port), NO_COLOR: "1", WRANGLER_SEND_METRICS: "false" },
    });
    started.push(npm);
    let output = "";
    npm.stdout!.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
    npm.stderr!.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
    await waitFor(npm, () => output, scripts[script].ready);
    tree.push(...descendantsOf(npm.pid!));
    const ports = [port, ...("SQLD_PORT" in extra ? [Number(extra.SQLD_PORT)] : [])];
    for (const held of ports) expect(await portIsFree(held), `port ${held} in use while serving`).toBe(false);

    process.kill(npm.pid!, signal);
    const left = (await survivors([npm.pid!, ...tree])).map((pid) => `${pid} ${commandOf(pid)}`);
    expect(left, output).toEqual([]);
    for (const held of ports) expect(await portIsFree(held), `port ${held}`).toBe(true);
  });
});
