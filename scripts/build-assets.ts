/**
 * Copy the docs page's static files from npm packages into `public/` (the
 * Workers static assets directory). Run before `wrangler dev` / `deploy`.
 */
import { copyFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { scalarStandaloneScriptPath } from "../src/runtime/node-assets";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const target = join(root, "public/docs/assets/scalar.js");
mkdirSync(dirname(target), { recursive: true });
copyFileSync(scalarStandaloneScriptPath(), target);
console.log(`docs assets → ${target}`);
