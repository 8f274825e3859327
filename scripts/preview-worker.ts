/**
 * Preview Workers through the wrangler CLI (node_modules/wrangler): one atomic
 * `wrangler deploy` carrying the code, the `DATABASE_URL` variable and the
 * `DATABASE_AUTH_TOKEN` secret (`--secrets-file`,
 * https://developers.cloudflare.com/workers/wrangler/commands/#deploy), the
 * `GET /health` check of the deployed URL, `wrangler delete`, and the list of
 * the account's Workers (Cloudflare API `GET /accounts/{id}/workers/scripts`).
 *
 * Environment: CLOUDFLARE_API_TOKEN, CLOUDFLARE_ACCOUNT_ID (wrangler's own),
 * CLOUDFLARE_API_BASE_URL (wrangler's; default https://api.cloudflare.com/client/v4).
 */
import { spawn } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT } from "./sqld";

export const WRANGLER = join(ROOT, "node_modules/wrangler/bin/wrangler.js");
const CLOUDFLARE_API_DEFAULT_BASE_URL = "https://api.cloudflare.com/client/v4";

/** Environment of every wrangler run: no metrics, no error reports, no banner (and its update check). */
function wranglerEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  return { ...process.env, WRANGLER_SEND_METRICS: "false", WRANGLER_SEND_ERROR_REPORTS: "false", WRANGLER_HIDE_BANNER: "true", ...extra };
}

/** Run wrangler with `args` (output to this process's); resolves with its exit code. */
export function runWrangler(args: string[], extraEnv: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [WRANGLER, ...args], { cwd: ROOT, env: wranglerEnv(extraEnv), stdio: ["ignore", "inherit", "inherit"] });
    child.on("error", reject);
    child.on("exit", (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
}

export interface DeployInput {
  worker: string;
  databaseUrl: string;
  databaseToken: string;
}

/** The arguments of the preview deploy (the secrets file path filled in at run time). */
export function deployArgs(worker: string, databaseUrl: string, secretsFile: string): string[] {
  return ["deploy", "--env", "preview", "--name", worker, "--minify", "--var", `DATABASE_URL:${databaseUrl}`, "--secrets-file", secretsFile];
}

/**
 * Deploy the preview Worker in one `wrangler deploy`: code, vars and the
 * database token (written to a JSON secrets file readable by this user only,
 * in a fresh temp folder removed afterwards). JSON, not dotenv: wrangler lets
 * process variables override a dotenv file's values (a DATABASE_AUTH_TOKEN in
 * the job's environment would win), never a JSON file's. Returns the workers.dev URL that
 * wrangler reports (its output file, `WRANGLER_OUTPUT_FILE_PATH`).
 * @throws Error when wrangler fails or reports no https URL.
 */
export async function deployWorker(input: DeployInput): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "petstore-preview-"));
  try {
    chmodSync(dir, 0o700);
    const secretsFile = join(dir, "secrets.json");
    writeFileSync(secretsFile, JSON.stringify({ DATABASE_AUTH_TOKEN: input.databaseToken }), { mode: 0o600 });
    const outputFile = join(dir, "wrangler-output.ndjson");
    console.log(`$ wrangler ${deployArgs(input.worker, input.databaseUrl, "<secrets file: DATABASE_AUTH_TOKEN>").join(" ")}`);
    const code = await runWrangler(deployArgs(input.worker, input.databaseUrl, secretsFile), { WRANGLER_OUTPUT_FILE_PATH: outputFile });
    if (code !== 0) throw new Error(`wrangler deploy of ${input.worker} failed (exit ${code})`);
    const url = deployedUrl(readFileSync(outputFile, "utf8"));
    if (!url) throw new Error(`wrangler deploy of ${input.worker} reported no workers.dev URL`);
    return url;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The first https target of the `deploy` entry of wrangler's ND-JSON output file. */
export function deployedUrl(ndjson: string): string | undefined {
  for (const line of ndjson.split("\n")) {
    if (!line.trim()) continue;
    const entry = JSON.parse(line) as { type?: string; targets?: string[] };
    if (entry.type === "deploy") return entry.targets?.find((t) => t.startsWith("https://"));
  }
  return undefined;
}

/**
 * Wait until `GET <origin>/health` answers 200, asking every `intervalMs`
 * (each attempt bounded by 10 s) until `timeoutMs` has passed: a new
 * workers.dev host can take a moment to answer.
 * @throws Error with the last status or network error when it never does.
 */
export async function waitForHealth(origin: string, timeoutMs: number, intervalMs = 2_000): Promise<void> {
  const url = new URL("/health", origin).toString();
  const deadline = Date.now() + timeoutMs;
  let last = "no attempt";
  for (;;) {
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(10_000), redirect: "manual" });
      await response.body?.cancel();
      if (response.status === 200) return;
      last = `status ${response.status}`;
    } catch (error) {
      last = error instanceof Error ? error.message : String(error);
    }
    if (Date.now() + intervalMs > deadline) throw new Error(`GET ${url} did not answer 200 within ${timeoutMs} ms (last: ${last})`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

interface Envelope<T> {
  success: boolean;
  errors: { code: number; message: string }[];
  result: T;
}

/**
 * Names of every Worker of the account (Cloudflare API, one GET).
 * @throws Error when the API refuses or fails.
 */
export async function listWorkers(env: NodeJS.ProcessEnv): Promise<string[]> {
  const base = env.CLOUDFLARE_API_BASE_URL || CLOUDFLARE_API_DEFAULT_BASE_URL;
  if (!env.CLOUDFLARE_API_TOKEN || !env.CLOUDFLARE_ACCOUNT_ID) throw new Error("missing CLOUDFLARE_API_TOKEN or CLOUDFLARE_ACCOUNT_ID");
  const response = await fetch(`${base}/accounts/${env.CLOUDFLARE_ACCOUNT_ID}/workers/scripts`, {
    headers: { authorization: `Bearer ${env.CLOUDFLARE_API_TOKEN}` },
    signal: AbortSignal.timeout(30_000),
  });
  const body = (await response.json().catch(() => undefined)) as Envelope<{ id: string }[]> | undefined;
  if (!response.ok || !body?.success)
    throw new Error(`listing Workers failed: ${response.status} ${body?.errors.map((e) => `${e.code} ${e.message}`).join("; ") ?? ""}`);
  return body.result.map((script) => script.id);
}

/**
 * Delete Worker `name` with `wrangler delete --force`, when it exists.
 * Returns false when it was already gone.
 * @throws Error when listing or wrangler fails.
 */
export async function deleteWorker(name: string, env: NodeJS.ProcessEnv): Promise<boolean> {
  if (!(await listWorkers(env)).includes(name)) return false;
  console.log(`$ wrangler delete --name ${name} --force`);
  const code = await runWrangler(["delete", "--name", name, "--force"]);
  if (code !== 0) throw new Error(`wrangler delete --name ${name} failed (exit ${code})`);
  return true;
}
