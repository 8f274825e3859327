/**
 * .ci/own-home, which runs CI's test command: a write into wrangler's global
 * folders is attributed to the command it ran only. The command's own wrangler
 * writing there fails the check (with the old settings: no WRANGLER_LOG_PATH);
 * another wrangler on the machine writing into the machine's home meanwhile
 * does not; the command's own failure keeps its exit status.
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../../scripts/sqld";

let machineHome: string;

beforeAll(() => {
  machineHome = mkdtempSync(join(tmpdir(), "petstore-machine-home-"));
});
afterAll(() => {
  if (machineHome) rmSync(machineHome, { recursive: true, force: true });
});

/**
 * Runs `.ci/own-home <command…>` on a machine whose home is `machineHome`;
 * `whileRunning` runs once the command has started (it waits for stdin to close).
 */
function ownHome(command: string[], whileRunning: () => void = () => undefined): Promise<{ status: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(join(ROOT, ".ci/own-home"), command, {
      cwd: ROOT,
      env: { ...process.env, HOME: machineHome, XDG_CONFIG_HOME: join(machineHome, ".config"), PETSTORE_NODE_CACHE: join(tmpdir(), "unused-node-cache") },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
      if (!stdout.includes("started")) return;
      whileRunning();
      child.stdin.end();
    });
    child.on("error", reject);
    child.on("close", (status) => resolve({ status, stderr }));
  });
}

/** A command that says it started, waits for stdin to close, then runs `script`. */
const afterStart = (script = "") => ["sh", "-c", `echo started; cat >/dev/null; ${script}`];

describe(".ci/own-home", { timeout: 60_000 }, () => {
  it("passes a command that writes nothing there, though another wrangler writes in the machine's home meanwhile", async () => {
    const { status, stderr } = await ownHome(afterStart(), () => {
      mkdirSync(join(machineHome, ".config/.wrangler/logs"), { recursive: true });
      writeFileSync(join(machineHome, ".config/.wrangler/logs/wrangler-other.log"), "another wrangler\n");
      mkdirSync(join(machineHome, ".wrangler"), { recursive: true });
      writeFileSync(join(machineHome, ".wrangler/other.log"), "another, legacy folder\n");
    });
    expect(stderr).toBe("");
    expect(status).toBe(0);
  });

  it.each([".config/.wrangler/logs/wrangler-x.log", ".wrangler/state.json"])("fails a command that writes %s in its home", async (file) => {
    const { status, stderr } = await ownHome(afterStart(`mkdir -p "$HOME/$(dirname ${file})"; echo x > "$HOME/${file}"`));
    expect(stderr).toContain(`wrote outside the repository`);
    expect(stderr).toContain(`~/${file}`);
    expect(status).toBe(1);
  });

  it("fails the command's own wrangler when its log is not kept in the repository", async () => {
    const { status, stderr } = await ownHome(afterStart("exec node node_modules/wrangler/bin/wrangler.js --version >/dev/null"));
    expect(stderr).toMatch(/~\/\.config\/\.wrangler\/logs\/wrangler-.*\.log/);
    expect(status).toBe(1);
  });

  it("keeps the command's own exit status, and leaves no home folder behind", async () => {
    const before = readdirSync(tmpdir()).filter((name) => name.startsWith("petstore-ci-home.")).length;
    const { status } = await ownHome(afterStart("exit 3"));
    expect(status).toBe(3);
    expect(readdirSync(tmpdir()).filter((name) => name.startsWith("petstore-ci-home.")).length).toBeLessThanOrEqual(before);
  });
});
