/**
 * CPU time of processes for `npm run bench` (Linux /proc): what the server
 * spent on the requests of one scenario, read from the kernel's accounting
 * (utime + stime of /proc/<pid>/stat, in clock ticks) before and after it.
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

/** Clock ticks per second of /proc/<pid>/stat times (`getconf CLK_TCK`, 100 on Linux). */
const TICKS_PER_SECOND = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;

interface Stat {
  name: string;
  parent: number;
  /** user + system CPU time, µs. */
  cpuUs: number;
}

/** Parse /proc/<pid>/stat; undefined when the process is gone. The name may hold spaces and parentheses: fields follow the last ")". */
function stat(pid: number): Stat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  const close = text.lastIndexOf(")");
  const fields = text.slice(close + 2).split(" ");
  // After the name: state(3) ppid(4) … utime(14) stime(15); fields[0] is field 3.
  const ticks = Number(fields[11]) + Number(fields[12]);
  return { name: text.slice(text.indexOf("(") + 1, close), parent: Number(fields[1]), cpuUs: (ticks * 1e6) / TICKS_PER_SECOND };
}

/** Total user + system CPU µs of `pids` (processes that are gone count 0). */
export function cpuUs(pids: readonly number[]): number {
  return pids.reduce((sum, pid) => sum + (stat(pid)?.cpuUs ?? 0), 0);
}

/** Processes descended from `root` (default: this process) whose name is `name`, e.g. "workerd". */
export function descendantsNamed(name: string, root = process.pid): number[] {
  const parents = new Map<number, Stat>();
  for (const entry of readdirSync("/proc")) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    const s = stat(pid);
    if (s) parents.set(pid, s);
  }
  const isDescendant = (pid: number): boolean => {
    for (let p = parents.get(pid)?.parent; p !== undefined && p > 1; p = parents.get(p)?.parent) if (p === root) return true;
    return false;
  };
  return [...parents].filter(([pid, s]) => s.name === name && isDescendant(pid)).map(([pid]) => pid);
}
