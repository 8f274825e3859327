/** Run one of the repository's scripts as a child process (`node --import tsx <script> …`) and collect what it printed. */
import { spawn } from "node:child_process";
import { ROOT } from "../../scripts/sqld";

/** How a script run ended: its exit code (-1: killed by a signal) and its output. */
export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Run `script` (a path from the repository root) with `args`, in the root, with this process's environment but the variables whose names
 * `dropped` matches, plus `env`; SIGKILLed after `timeoutMs`. @returns its exit code and output. @throws when it cannot be started.
 */
export function runScript(script: string, args: string[], options: { dropped: RegExp; env: Record<string, string>; timeoutMs: number }): Promise<Run> {
  const childEnv: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) if (!options.dropped.test(name)) childEnv[name] = value;
  Object.assign(childEnv, options.env);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", script, ...args], { cwd: ROOT, env: childEnv, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs);
    child.on("error", reject);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
  });
}
