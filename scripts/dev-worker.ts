/**
 * `npm run dev:worker [-- <wrangler dev options>]`: the Worker locally, on a
 * real libSQL server.
 *
 * 1. starts sqld (scripts/sqld.ts) with its data in `$SQLD_DATA_DIR` (default
 *    `.data/sqld/`) on 127.0.0.1:$SQLD_PORT (default 8080 when free, else any
 *    free port);
 * 2. applies the Drizzle migrations to it over HTTP; on a database without a
 *    staff account, creates one and prints its key once (like `npm start`);
 * 3. copies the docs assets into public/ (scripts/build-assets.ts);
 * 4. runs `wrangler dev` on $HOST:$PORT (default 127.0.0.1:8787) with
 *    `DATABASE_URL` pointing at sqld and `DATABASE_AUTH_TOKEN` from the
 *    environment, empty by default (the local sqld checks no token; wrangler
 *    reads required secrets from the environment); extra arguments go to
 *    `wrangler dev`. Its output is passed on without wrangler's own line per
 *    request: the Worker writes one JSON line per request (request-log.ts);
 * 5. passes SIGINT and SIGTERM on to wrangler, stops sqld when wrangler exits,
 *    and exits with wrangler's code.
 */
import { spawn } from "node:child_process";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import { stripVTControlCharacters } from "node:util";
import { createClient } from "@libsql/client";
import { bootstrapStaffKey } from "../src/services/accounts.service";
import { freePort, migrateServer, ONE_CONNECTION, ROOT, startSqld } from "./sqld";
import { buildAssets } from "./build-assets";

/**
 * Whether `line` of wrangler's output is its own log of one request
 * (`[wrangler:info] GET /pets 200 OK (12ms)`, colours or not), which repeats
 * the Worker's JSON request line.
 */
export function isWranglerRequestLine(line: string): boolean {
  return /^\[wrangler:info\] [A-Z]+ \S+ \d{3} /.test(stripVTControlCharacters(line));
}

/** 8080 (the DATABASE_URL default in wrangler.toml) when free, else any free port. */
async function sqldPort(): Promise<number> {
  if (process.env.SQLD_PORT) return Number(process.env.SQLD_PORT);
  const { createServer } = await import("node:net");
  const free = await new Promise<boolean>((resolve) => {
    const probe = createServer().once("error", () => resolve(false));
    probe.listen(8080, "127.0.0.1", () => probe.close(() => resolve(true)));
  });
  return free ? 8080 : freePort();
}

async function main(): Promise<number> {
  const dataDir = process.env.SQLD_DATA_DIR || join(ROOT, ".data/sqld");
  const sqld = await startSqld({ dataDir, port: await sqldPort(), ...ONE_CONNECTION });
  console.log(`sqld (libSQL server) on ${sqld.url}, data in ${dataDir}`);
  try {
    await migrateServer(sqld.url);
    const client = createClient({ url: sqld.url });
    const bootstrap = await bootstrapStaffKey(client, new Date());
    client.close();
    if (bootstrap) {
      console.log(`New database: staff key (shown once, keep it): ${bootstrap.key}`);
    }
    console.log(`More keys: DATABASE_URL=${sqld.url} npm run keys:create -- --role staff`);
    buildAssets();
  } catch (error) {
    await sqld.stop();
    throw error;
  }

  const host = process.env.HOST || "127.0.0.1";
  const port = process.env.PORT || "8787";
  const wrangler = spawn(
    process.execPath,
    [join(ROOT, "node_modules/wrangler/bin/wrangler.js"), "dev", "--ip", host, "--port", port, "--var", `DATABASE_URL:${sqld.url}`, ...process.argv.slice(2)],
    {
      cwd: ROOT,
      stdio: ["inherit", "pipe", "inherit"],
      env: {
        ...process.env,
        DATABASE_AUTH_TOKEN: process.env.DATABASE_AUTH_TOKEN ?? "",
        CLOUDFLARE_CF_FETCH_ENABLED: process.env.CLOUDFLARE_CF_FETCH_ENABLED ?? "false",
        // wrangler's output is piped through here: keep its colours when ours is a terminal.
        ...(process.stdout.isTTY && !process.env.NO_COLOR ? { FORCE_COLOR: "1" } : {}),
      },
    },
  );
  createInterface({ input: wrangler.stdout, crlfDelay: Number.POSITIVE_INFINITY }).on("line", (line) => {
    if (!isWranglerRequestLine(line)) process.stdout.write(`${line}\n`);
  });
  // SIGINT and SIGTERM sent to us alone (npm's pid signalled by a supervisor, passed down by
  // npm and with-node.mjs) are passed on; wrangler stops workerd, then sqld is stopped below.
  // Ctrl-C in a terminal reaches wrangler from its process group too: once more is harmless.
  for (const signal of ["SIGINT", "SIGTERM"] as const)
    process.on(signal, () => {
      if (wrangler.exitCode === null) wrangler.kill(signal);
    });
  const code = await new Promise<number>((resolve) => wrangler.once("exit", (c, signal) => resolve(c ?? (signal ? 130 : 1))));
  await sqld.stop();
  console.log("sqld stopped");
  return code;
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  main().then(
    (code) => process.exit(code),
    (error) => {
      console.error(error instanceof Error ? error.message : error);
      process.exit(1);
    },
  );
}
