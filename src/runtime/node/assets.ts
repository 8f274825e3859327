/** Static files of the docs page on Node, read from the npm package that ships them (`@scalar/api-reference`): /docs needs no outside network. */
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { join, sep } from "node:path";
import { SCALAR_SCRIPT_PATH, type AssetSource } from "../../http/assets";

const require = createRequire(import.meta.url);

/** Absolute path of `@scalar/api-reference`'s dist/browser/standalone.js, found beside its main module (its `exports` map does not list it). */
export function scalarStandaloneScriptPath(): string {
  const main = require.resolve("@scalar/api-reference");
  return join(main.slice(0, main.lastIndexOf(`${sep}dist${sep}`)), "dist", "browser", "standalone.js");
}

/** An AssetSource serving the Scalar standalone script (read once, then from memory). */
export function nodeAssets(): AssetSource {
  let script: Promise<Buffer> | undefined;
  return async (path) => {
    if (path !== SCALAR_SCRIPT_PATH) return null;
    script ??= readFile(scalarStandaloneScriptPath());
    return new Response(new Uint8Array(await script), {
      headers: { "Content-Type": "text/javascript; charset=utf-8", "Cache-Control": "public, max-age=86400" },
    });
  };
}
