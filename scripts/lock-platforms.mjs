#!/usr/bin/env node
/**
 * `npm run lock:platforms`: declare in package-lock.json every optional
 * platform package that a locked package names but the lockfile lacks.
 *
 * Why: this project's registry does not serve every platform's binary
 * package of a release (e.g. `@cloudflare/workerd-darwin-64@1.20261117.1`,
 * `@biomejs/cli-win32-x64@2.6.8`). npm then writes a lockfile without them,
 * and its own `npm ci` refuses that lockfile ("Missing: … from lock file").
 * An entry gated by `os`/`cpu`/`libc` is never fetched on other platforms, so
 * declaring them makes `npm ci` accept the lockfile everywhere here, and on a
 * registry that has them they install as usual. Run after `npm install` adds
 * or upgrades a package with per-platform binaries; prints what it added.
 *
 * Platform, CPU and libc come from the package name's tokens
 * (`darwin|linux|win32|windows|android|freebsd`, `x64|64|arm64|ia32`, `musl`).
 * Exit 1 when a missing package's name does not say its platform.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const OS = { darwin: "darwin", linux: "linux", win32: "win32", windows: "win32", android: "android", freebsd: "freebsd" };
const CPU = { x64: "x64", 64: "x64", arm64: "arm64", ia32: "ia32" };

/** `{ os, cpu, libc? }` of a platform package from its name, or undefined. */
export function platformOf(name) {
  const tokens = name.split("/").pop().split("-");
  const os = tokens.map((t) => OS[t]).find(Boolean);
  const cpu = tokens.map((t) => CPU[t]).find(Boolean);
  if (!os || !cpu) return undefined;
  const libc = os === "linux" ? (tokens.includes("musl") ? "musl" : "glibc") : undefined;
  return { os, cpu, libc };
}

/**
 * Add the missing optional platform packages to a parsed lockfile (v3).
 * @returns {{ added: string[], unknown: string[] }} package names added, and names whose platform is unclear.
 */
export function declareMissingPlatforms(lock) {
  const packages = lock.packages;
  const added = [];
  const unknown = [];
  for (const [path, entry] of Object.entries(packages)) {
    for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
      const key = `node_modules/${name}`;
      const nested = `${path}/node_modules/${name}`;
      if (packages[key] || packages[nested]) continue;
      const platform = platformOf(name);
      if (!platform) {
        unknown.push(name);
        continue;
      }
      packages[key] = {
        version,
        cpu: [platform.cpu],
        ...(entry.dev ? { dev: true } : {}),
        ...(platform.libc ? { libc: [platform.libc] } : {}),
        optional: true,
        os: [platform.os],
      };
      added.push(`${name}@${version}`);
    }
  }
  lock.packages = Object.fromEntries(Object.entries(packages).sort(([a], [b]) => (a === "" ? -1 : b === "" ? 1 : a < b ? -1 : a > b ? 1 : 0)));
  return { added, unknown };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const file = join(import.meta.dirname, "..", "package-lock.json");
  const lock = JSON.parse(readFileSync(file, "utf8"));
  const { added, unknown } = declareMissingPlatforms(lock);
  writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
  for (const name of added) console.log(`declared ${name}`);
  if (unknown.length > 0) {
    console.error(`cannot tell the platform of: ${unknown.join(", ")}`);
    process.exit(1);
  }
  if (added.length === 0) console.log("package-lock.json declares every optional platform package");
}
