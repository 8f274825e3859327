/**
 * `npm run check:bundle [-- --outdir dist] [--budget-kib 300]`: build the
 * Worker exactly as it deploys (`wrangler deploy --dry-run --outdir <dir>
 * --minify`, offline) and fail when the gzipped Worker script exceeds the
 * budget (default 300 KiB; Workers' free plan allows 3 MiB gzipped, but
 * startup time grows with script size). Prints raw and gzipped sizes.
 * Exit codes: 0 within budget, 1 over budget or build failure.
 */
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { gzipSync } from "node:zlib";
import { ROOT } from "./sqld";
import { buildAssets } from "./build-assets";

/** Default budget of the gzipped Worker bundle, KiB (issue 5). */
export const BUNDLE_BUDGET_KIB = 300;

/** Raw and gzipped (level 9) size of the JavaScript modules in `outdir`, bytes. */
export function bundleSize(outdir: string): { files: string[]; raw: number; gzip: number } {
  const files = readdirSync(outdir).filter((f) => /\.(m?js|cjs)$/.test(f));
  if (files.length === 0) throw new Error(`no Worker script in ${outdir}`);
  let raw = 0;
  let gzip = 0;
  for (const file of files) {
    const bytes = readFileSync(join(outdir, file));
    raw += bytes.length;
    gzip += gzipSync(bytes, { level: 9 }).length;
  }
  return { files, raw, gzip };
}

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { outdir: { type: "string", default: "dist" }, "budget-kib": { type: "string" } } });
  const outdir = resolve(ROOT, values.outdir!);
  const budgetKiB = Number(values["budget-kib"] ?? BUNDLE_BUDGET_KIB);
  buildAssets(); // public/ for the [assets] directory
  rmSync(outdir, { recursive: true, force: true });
  const build = spawnSync(process.execPath, [join(ROOT, "node_modules/wrangler/bin/wrangler.js"), "deploy", "--dry-run", "--outdir", outdir, "--minify"], {
    cwd: ROOT,
    stdio: "inherit",
    env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
  });
  if (build.status !== 0) {
    console.error(`check:bundle: wrangler deploy --dry-run failed (exit ${build.status})`);
    return 1;
  }
  const { files, raw, gzip } = bundleSize(outdir);
  const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
  const verdict = gzip <= budgetKiB * 1024 ? "within" : "OVER";
  console.log(`Worker bundle (${files.join(", ")}): ${kib(raw)} raw, ${kib(gzip)} gzipped — ${verdict} the ${budgetKiB} KiB budget`);
  return verdict === "within" ? 0 : 1;
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  process.exit(await main());
}
