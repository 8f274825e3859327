/**
 * Copy the docs page's static files from npm packages into `public/` (the
 * Workers static assets directory, `[assets]` in wrangler.toml). Run before
 * `wrangler dev` / `deploy` (wrangler refuses a missing assets directory).
 * `npm run build:assets`, or `buildAssets()` from another script.
 */
import { copyFileSync, mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { scalarStandaloneScriptPath } from "../src/runtime/node/assets";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/** Write public/docs/assets/scalar.js; returns its path. */
export function buildAssets(): string {
  const target = join(root, "public/docs/assets/scalar.js");
  mkdirSync(dirname(target), { recursive: true });
  copyFileSync(scalarStandaloneScriptPath(), target);
  return target;
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  console.log(`docs assets → ${buildAssets()}`);
}
