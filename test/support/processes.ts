/**
 * The process tree of a test's servers, read from Linux `/proc`: which
 * processes a server (a cluster's primary, or `npm start`) has below it.
 */
import type { ChildProcess } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { afterEach } from "vitest";

/** Every live process's parent pid, by pid (`/proc/<pid>/stat`, field 4). */
function parents(): Map<number, number> {
  const found = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      found.set(Number(entry), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** The processes whose parent is `pid`. */
export function childrenOf(pid: number): number[] {
  return [...parents()].filter(([, parent]) => parent === pid).map(([child]) => child);
}

/** Every process below `pid`, children before grandchildren. */
export function descendantsOf(pid: number): number[] {
  const tree = parents();
  const found: number[] = [];
  for (let frontier = [pid]; frontier.length > 0; ) {
    frontier = [...tree].filter(([, parent]) => frontier.includes(parent)).map(([child]) => child);
    found.push(...frontier);
  }
  return found;
}

/** True while process `pid` exists (signal 0 checks without signalling). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** True when `port` on 127.0.0.1 can be bound (no server holds it). */
export function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once("error", () => resolve(false));
    probe.listen(port, "127.0.0.1", () => probe.close(() => resolve(true)));
  });
}

/**
 * Lists that a test file fills with the processes it started (`started`) and the pids of their
 * trees (`tree`); after each test every one still running is SIGKILLed by pid, so that a failed
 * test leaves no server behind.
 */
export function killedAfterEach(): { started: ChildProcess[]; tree: number[] } {
  const started: ChildProcess[] = [];
  const tree: number[] = [];
  afterEach(() => {
    for (const pid of tree.splice(0)) if (alive(pid)) process.kill(pid, "SIGKILL");
    for (const child of started.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  return { started, tree };
}
