/**
 * The processes `npm run bench` measures: starting a script as a child the
 * way `npm start` runs the server, waiting for it to answer, stopping it,
 * and its peak memory.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "../scripts/sqld";

/**
 * Resolves once `url` answers 2xx (polled every 100 ms, 30 s at most).
 * @throws when `child` exits first or the time is up.
 */
export async function waitFor(url: string, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`${url}: process exited with ${child.exitCode}`);
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not come up`);
}

/** Run a script from the root: `.mjs` as is (the built server `npm start` runs), `.ts` through tsx. */
export function startScript(script: string, env: Record<string, string>, nodeArgs: string[] = []): ChildProcess {
  return spawn(process.execPath, [...nodeArgs, ...(script.endsWith(".mjs") ? [script] : ["--import", "tsx", script])], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "ignore", "inherit"],
  });
}

/**
 * What an `npm start` script line sets before running dist/node/server.mjs:
 * its environment assignments (e.g. `MALLOC_ARENA_MAX=2`) and node flags
 * (e.g. `--max-semi-space-size=8`), so the measured server runs as it does.
 */
export function startCommandOf(script: string): { env: Record<string, string>; nodeFlags: string[] } {
  const flags = /\bnode((?:\s+--\S+)*)\s+dist\/node\/server\.mjs/.exec(script)?.[1] ?? "";
  const assignments = /&&\s+((?:\w+=\S+\s+)*)(?:exec\s+)?node scripts\/with-node\.mjs/.exec(script)?.[1] ?? "";
  const words = (text: string) => text.trim().split(/\s+/).filter(Boolean);
  return {
    env: Object.fromEntries(words(assignments).map((a) => [a.slice(0, a.indexOf("=")), a.slice(a.indexOf("=") + 1)])),
    nodeFlags: words(flags),
  };
}

/** `startCommandOf` the repository's own `npm start` (package.json). */
export function npmStartCommand(): { env: Record<string, string>; nodeFlags: string[] } {
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> };
  return startCommandOf(pkg.scripts.start ?? "");
}

/** Peak resident set size of a process in MB (Linux VmHWM). */
export function peakRssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round(kb / 1024);
}

/** Send SIGTERM to `child` and resolve once it has exited (at once if it already has). */
export function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  return exited;
}
