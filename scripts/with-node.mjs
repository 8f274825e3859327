#!/usr/bin/env node
/**
 * Run a command under a supported Node (≥ 22.12; the project targets Node 24 LTS).
 *
 *   node scripts/with-node.mjs <command> [args…]   run <command> with a supported `node` first on PATH
 *   node scripts/with-node.mjs --bin-dir           print the folder of a supported `node` binary
 *
 * On Node ≥ 22.12 the command runs as it is (no fetch, no message). On an older
 * Node (the machines of this project ship Node 20.20, which is end-of-life), the
 * npm registry's `node-<platform>-<arch>@24` package — a Node binary with no
 * install script — is installed once into a cache folder outside the repository
 * (`$PETSTORE_NODE_CACHE`, else `$XDG_CACHE_HOME/petstore-node`, else
 * `~/.cache/petstore-node`) and its `bin` is put first on PATH; one line on
 * stderr says so. Written in plain JavaScript so that it runs on any Node ≥ 18.
 *
 * Exit status: the command's (128 + signal number when it died of a signal);
 * 1 with one line on stderr when no supported Node can be had.
 */
import { spawn, spawnSync } from "node:child_process";
import { isatty } from "node:tty";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { constants } from "node:os";
import { pathToFileURL } from "node:url";

/** The oldest Node the project supports (wrangler and vitest need 22.12). */
export const MINIMUM_NODE = "22.12.0";
/** The major fetched when the running Node is older (Node 24 LTS). */
export const FETCHED_MAJOR = 24;

/** True when `version` ("20.20.2" or "v24.1.0") is at least MINIMUM_NODE. */
export function isSupported(version) {
  const parse = (v) =>
    v
      .replace(/^v/, "")
      .split(".")
      .map((part) => Number.parseInt(part, 10) || 0);
  const [a, b] = [parse(version), parse(MINIMUM_NODE)];
  for (let i = 0; i < 3; i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) > (b[i] ?? 0);
  return true;
}

/** The cache folder for fetched Node binaries (see module docs), from an environment. */
export function cacheRoot(env) {
  if (env.PETSTORE_NODE_CACHE) return env.PETSTORE_NODE_CACHE;
  return join(env.XDG_CACHE_HOME || join(homedir(), ".cache"), "petstore-node");
}

/** The `node --version` of a binary, or undefined when it does not run. */
function versionOf(nodePath) {
  const result = spawnSync(nodePath, ["--version"], { encoding: "utf8" });
  return result.status === 0 ? result.stdout.trim() : undefined;
}

/** The `bin` folder of the one installed package under `prefix` that has `bin/node`, if any. */
function nodeBinDir(prefix) {
  const modules = join(prefix, "node_modules");
  if (!existsSync(modules)) return undefined;
  const names = readdirSync(modules).flatMap((name) => (name.startsWith("@") ? readdirSync(join(modules, name)).map((sub) => `${name}/${sub}`) : [name]));
  const found = names.find((name) => existsSync(join(modules, name, "bin", "node")));
  return found ? join(modules, found, "bin") : undefined;
}

/**
 * The `bin` folder of a supported Node from the cache, installing
 * `packageSpec` (default `node-<platform>-<arch>@24`) with npm first when the
 * cache has none. The install goes to a temporary folder renamed into place,
 * so concurrent first runs never see half a binary.
 * @returns {{ binDir: string, version: string, fetched: boolean }}
 * @throws Error when npm fails or the installed binary is not a supported Node.
 */
export function ensureCachedNode({ env, packageSpec }) {
  const spec = packageSpec || `node-${process.platform}-${process.arch}@${FETCHED_MAJOR}`;
  const root = cacheRoot(env);
  const folder = join(root, spec.replace(/[^A-Za-z0-9@._-]/g, "_"));
  const cachedBin = nodeBinDir(folder);
  const cached = cachedBin ? versionOf(join(cachedBin, "node")) : undefined;
  if (cachedBin && cached && isSupported(cached)) return { binDir: cachedBin, version: cached, fetched: false };

  mkdirSync(root, { recursive: true });
  const staging = mkdtempSync(join(root, ".staging-"));
  try {
    const npm = spawnSync(
      "npm",
      ["install", "--prefix", staging, "--no-save", "--no-package-lock", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error", spec],
      { cwd: staging, env, encoding: "utf8" },
    );
    if (npm.status !== 0) throw new Error(`npm install ${spec} failed: ${(npm.stderr || npm.error?.message || "").trim()}`);
    const stagedBin = nodeBinDir(staging);
    const version = stagedBin ? versionOf(join(stagedBin, "node")) : undefined;
    if (!version || !isSupported(version)) throw new Error(`${spec} did not provide a Node ≥ ${MINIMUM_NODE} (got ${version ?? "nothing"})`);
    rmSync(folder, { recursive: true, force: true });
    renameSync(staging, folder);
    return { binDir: nodeBinDir(folder), version, fetched: true };
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/**
 * The `bin` folder to put first on PATH, or undefined when the running Node
 * (`currentVersion`) is supported; prints the one-line notice in the other case.
 */
export function supportedNodeBinDir({ currentVersion, env, packageSpec, log }) {
  if (isSupported(currentVersion)) return undefined;
  const { binDir, version, fetched } = ensureCachedNode({ env, packageSpec });
  log(
    `Node ${currentVersion} is older than ${MINIMUM_NODE}: running under Node ${version} from ${binDir}` +
      (fetched ? " (fetched once from the npm registry)." : "."),
  );
  return binDir;
}

/**
 * True when the command's stdout (per `stdio`, as `spawn` takes it) is a terminal.
 * @param {import("node:child_process").StdioOptions} stdio
 */
export function outputIsTerminal(stdio) {
  const out = stdio === "inherit" ? 1 : Array.isArray(stdio) ? stdio[1] : undefined;
  if (out === "inherit") return isatty(1);
  return typeof out === "number" ? isatty(out) : false;
}

/**
 * The command-line entry (see module docs) with its inputs injected.
 * @param {{ argv: string[], currentVersion: string, env: NodeJS.ProcessEnv, log?: (line: string) => void,
 *   print?: (line: string) => void, stdio?: import("node:child_process").StdioOptions }} options
 *   log: notices and errors (stderr); print: the --bin-dir answer (stdout); stdio: the command's.
 * @returns {Promise<number>} the exit status.
 */
export async function main({
  argv,
  currentVersion,
  env,
  log = (line) => process.stderr.write(`${line}\n`),
  print = (line) => process.stdout.write(`${line}\n`),
  stdio = "inherit",
}) {
  let binDir;
  try {
    binDir = supportedNodeBinDir({ currentVersion, env, packageSpec: env.PETSTORE_NODE_PACKAGE, log });
  } catch (error) {
    log(`Cannot get Node ≥ ${MINIMUM_NODE} (running ${currentVersion}): ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
  if (argv[0] === "--bin-dir") {
    print(binDir ?? dirname(process.execPath));
    return 0;
  }
  if (argv.length === 0) {
    log("usage: node scripts/with-node.mjs <command> [args…] | --bin-dir");
    return 2;
  }
  const withNode = binDir ? { ...env, PATH: `${binDir}${delimiter}${env.PATH ?? ""}`, NODE: join(binDir, "node") } : env;
  // Output to a file or pipe gets no ANSI colours (vitest colours by TERM alone; NO_COLOR: no-color.org).
  const redirected = !outputIsTerminal(stdio) && env.FORCE_COLOR === undefined && env.NO_COLOR === undefined;
  const childEnv = redirected ? { ...withNode, NO_COLOR: "1" } : withNode;
  const child = spawn(argv[0], argv.slice(1), { stdio, env: childEnv });
  const forward = (signal) => child.kill(signal);
  const signals = ["SIGINT", "SIGTERM", "SIGHUP"];
  for (const signal of signals) process.on(signal, forward);
  return new Promise((resolve) => {
    child.on("error", (error) => {
      log(`${argv[0]}: ${error.message}`);
      resolve(127);
    });
    child.on("close", (code, signal) => {
      for (const s of signals) process.off(s, forward);
      resolve(code ?? 128 + (constants.signals[signal] ?? 0));
    });
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  main({ argv: process.argv.slice(2), currentVersion: process.versions.node, env: process.env }).then((status) => process.exit(status));
}
