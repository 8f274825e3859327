/**
 * The `npm start` bundle of the Node server for the tests: built once per run by
 * the node projects' global setup (test/support/node-global-setup.ts) with the
 * esbuild options of `npm run build:server`, into a folder of its own under
 * dist/ (two levels down like dist/node/, so the bundle finds ../../drizzle),
 * so that a test running `npm start` (which rebuilds dist/node/server.mjs)
 * never rewrites the file another test is starting. Starting the bundle costs
 * a quarter of the CPU of `node --import tsx src/server.ts`.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { inject } from "vitest";

declare module "vitest" {
  interface ProvidedContext {
    serverBundle: string;
  }
}

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** The arguments `npm run build:server` gives esbuild, with the bundle written to `outfile` instead of dist/node/server.mjs. */
function buildArgs(outfile: string): string[] {
  const script = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts["build:server"]!;
  const [command, ...args] = script.split(/\s+/);
  if (command !== "esbuild" || !args.includes("--outfile=dist/node/server.mjs")) throw new Error(`unexpected build:server script: ${script}`);
  return args.map((arg) => (arg === "--outfile=dist/node/server.mjs" ? `--outfile=${outfile}` : arg));
}

/** Build the server bundle into a new folder under dist/; returns its path and a function that removes the folder. */
export function buildServerBundleInto(): { path: string; remove: () => void } {
  mkdirSync(join(ROOT, "dist"), { recursive: true });
  const dir = mkdtempSync(join(ROOT, "dist", "test-"));
  const path = join(dir, "server.mjs");
  execFileSync(join(ROOT, "node_modules", ".bin", "esbuild"), buildArgs(path), { cwd: ROOT, stdio: "inherit" });
  return { path, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

let ownBuild: string | undefined;

/**
 * The bundle's path: the one the global setup built for this run or, in a
 * project without that setup, one built once by this test process.
 */
export function serverBundle(): string {
  const provided = inject("serverBundle");
  if (provided) return provided;
  if (!ownBuild) {
    const built = buildServerBundleInto();
    process.once("exit", built.remove);
    ownBuild = built.path;
  }
  return ownBuild;
}
