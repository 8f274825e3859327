/**
 * Preview deployments (scripts/preview.ts, docs/deployment.md#previews-one-per-branch), run for real: the
 * script as `npm run preview` runs it, driving the real wrangler CLI against a
 * local fake of the Cloudflare API (test/support/fake-cloudflare-api.ts) and
 * the official Turso client against a local fake Platform API
 * (test/support/fake-turso-api.ts) whose databases are one real sqld. Every
 * request is recorded; an HTTP(S) proxy trap catches anything that would
 * leave the machine. Also: the preview configuration wrangler.toml gives.
 * Names and the dry run are in preview-plan.test.ts.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@libsql/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unstable_readConfig } from "wrangler";
import { ROOT, startSqld, type SqldServer } from "../../scripts/sqld";
import { FakeCloudflareApi } from "../support/fake-cloudflare-api";
import { FakeTursoApi } from "../support/fake-turso-api";
import { BRANCH, MAIN_DB, usePreviewRunner, WORKER, type Run } from "../support/preview-runner";

describe("preview configuration (wrangler.toml --env preview)", () => {
  it("has no edge cache and no purge coordinator, so previews never spend production's purge budget", () => {
    const configPath = join(ROOT, "wrangler.toml");
    const production = unstable_readConfig({ config: configPath });
    const preview = unstable_readConfig({ config: configPath, env: "preview" });
    expect(production.cache).toEqual({ enabled: true });
    expect(production.durable_objects.bindings.map((b: { name: string }) => b.name)).toEqual(["PURGE_COORDINATOR"]);
    expect(preview.cache).toEqual({ enabled: false });
    expect(preview.durable_objects.bindings).toEqual([]);
    expect(preview.migrations).toEqual([]);
  });
});

// ---------------------------------------------------------------------------
// The script against the real CLI and client, on local fakes.

const ACCOUNT = "0123456789abcdef0123456789abcdef";
const CF_TOKEN = "fake-cloudflare-token";
const TURSO_TOKEN = "fake-turso-platform-token";
const ORG = "acme";
const PRODUCTION_WORKER = "petstore";

const runPreview = usePreviewRunner();

/** A server answering `GET /health` with `status`; records the paths asked. */
async function startHealth(): Promise<{ server: Server; origin: string; status: number; paths: string[] }> {
  const state = { server: undefined as unknown as Server, origin: "", status: 200, paths: [] as string[] };
  state.server = createServer((req, res) => {
    state.paths.push(req.url ?? "");
    res.writeHead(req.url === "/health" ? state.status : 404, { "content-type": "application/json" }).end("{}");
  });
  await new Promise<void>((resolve) => state.server.listen(0, "127.0.0.1", resolve));
  state.origin = `http://127.0.0.1:${(state.server.address() as AddressInfo).port}`;
  return state;
}

/** An HTTP proxy that answers 403 to everything: any request sent to it was headed off the machine. */
async function startProxyTrap(): Promise<{ server: Server; url: string; seen: string[] }> {
  const seen: string[] = [];
  const server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    res.writeHead(403).end();
  });
  server.on("connect", (req, socket) => {
    seen.push(`CONNECT ${req.url}`);
    socket.end("HTTP/1.1 403 Forbidden\r\n\r\n");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

describe("npm run preview against the real wrangler CLI and Turso client", () => {
  let dir: string;
  let sqld: SqldServer;
  let cf: FakeCloudflareApi;
  let turso: FakeTursoApi;
  let health: Awaited<ReturnType<typeof startHealth>>;
  let trap: Awaited<ReturnType<typeof startProxyTrap>>;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "petstore-preview-test-"));
    sqld = await startSqld({ dataDir: join(dir, "sqld") });
    cf = await FakeCloudflareApi.start({ accountId: ACCOUNT, apiToken: CF_TOKEN, subdomain: "acme-dev", workers: [PRODUCTION_WORKER] });
    turso = await FakeTursoApi.start({ org: ORG, apiToken: TURSO_TOKEN, host: new URL(sqld.url).host, databases: [MAIN_DB, "petstore"] });
    health = await startHealth();
    trap = await startProxyTrap();
  });

  afterAll(async () => {
    await Promise.all([cf?.close(), turso?.close(), sqld?.stop()]);
    health?.server.close();
    trap?.server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The script with fake credentials, everything pointed at the fakes. */
  function preview(args: string[], extraEnv: Record<string, string> = {}): Promise<Run> {
    return runPreview(args, {
      CLOUDFLARE_API_BASE_URL: cf.baseUrl,
      CLOUDFLARE_API_TOKEN: CF_TOKEN,
      CLOUDFLARE_ACCOUNT_ID: ACCOUNT,
      TURSO_API_BASE_URL: turso.baseUrl,
      TURSO_API_TOKEN: TURSO_TOKEN,
      TURSO_ORG: ORG,
      TURSO_MAIN_DB: MAIN_DB,
      PREVIEW_ORIGIN: health.origin,
      PREVIEW_HEALTH_TIMEOUT_SECONDS: "3",
      // wrangler sends non-loopback requests through these (loopback bypasses them).
      HTTPS_PROXY: trap.url,
      HTTP_PROXY: trap.url,
      ...extraEnv,
    });
  }

  /** No request to either API ever named the production Worker or a production database. */
  function expectProductionUntouched(): void {
    const production = new Set([PRODUCTION_WORKER, MAIN_DB]);
    for (const r of [...cf.requests, ...turso.requests]) {
      for (const segment of r.path.split("/")) expect(production.has(segment), `${r.method} ${r.path}`).toBe(false);
      expect(production.has(String((r as { json?: { name?: unknown } }).json?.name ?? "")), `${r.method} ${r.path} body`).toBe(false);
    }
    expect(cf.workers.has(PRODUCTION_WORKER)).toBe(true);
    expect(turso.databases.has(MAIN_DB)).toBe(true);
  }

  function expectNothingElse(): void {
    expect(cf.unknown, "Cloudflare API calls the fake does not know").toEqual([]);
    expect(turso.unknown, "Platform API calls the fake does not know").toEqual([]);
    expect(trap.seen, "requests headed off the machine").toEqual([]);
  }

  it("deploys in one upload carrying DATABASE_URL and the DATABASE_AUTH_TOKEN secret, on an empty database it migrates and seeds, then checks /health", {
    timeout: 180_000,
  }, async () => {
    const run = await preview([BRANCH]);
    expect(run.code, run.stderr + run.stdout).toBe(0);

    // Turso: created empty (no seed from another database), its own expiring full-access token.
    const creates = turso.requests.filter((r) => r.method === "POST" && r.path === `/organizations/${ORG}/databases`);
    expect(creates.map((r) => r.json)).toEqual([{ name: WORKER, group: "default" }]);
    expect(turso.tokens).toHaveLength(1);
    const token = turso.tokens[0]!;
    expect(token).toMatchObject({ database: WORKER, expiration: "30d", authorization: "full-access" });

    // Cloudflare: exactly one script upload, to the preview Worker, with the URL and the token together.
    const uploads = cf.uploads();
    expect(uploads.map((u) => `${u.method} ${u.path}`)).toEqual([`PUT /accounts/${ACCOUNT}/workers/scripts/${WORKER}`]);
    const bindings = uploads[0]!.metadata!.bindings!;
    expect(bindings.find((b) => b.name === "DATABASE_URL")).toMatchObject({ type: "plain_text", text: sqld.url });
    expect(bindings.find((b) => b.name === "DATABASE_AUTH_TOKEN")).toMatchObject({ type: "secret_text", text: token.jwt });
    expect(bindings.find((b) => b.name === "WEBHOOKS_ENABLED")).toMatchObject({ type: "plain_text", text: "false" });
    // No edge cache and no purge coordinator: the account's purge budget stays production's.
    expect(uploads[0]!.metadata!.cache_options).toEqual({ enabled: false });
    expect(bindings.filter((b) => b.type === "durable_object_namespace")).toEqual([]);
    expect(uploads[0]!.metadata!.migrations).toBeUndefined();
    // No cron on the preview: the schedule, when set, is empty.
    expect(cf.workers.get(WORKER)!.crons).toEqual([]);
    expect(cf.requests.filter((r) => r.path.endsWith("/schedules") && r.method === "PUT").map((r) => r.json)).toEqual([[]]);
    expect(
      cf.requests.some((r) => r.path.includes("/secrets") && r.method === "PUT"),
      "no separate secret upload",
    ).toBe(false);

    // The database is migrated and seeded from the corpora, with no key or subscription.
    const db = createClient({ url: sqld.url });
    try {
      const count = async (table: string) => Number((await db.execute(`SELECT count(*) AS n FROM ${table}`)).rows[0]!.n);
      expect(await count("categories")).toBeGreaterThan(100);
      expect(await count("pets")).toBeGreaterThan(1000);
      expect(await count("api_keys")).toBe(0);
      expect(await count("webhooks")).toBe(0);
    } finally {
      db.close();
    }

    expect(health.paths).toContain("/health");
    expect(run.stdout).toContain(`https://${WORKER}.acme-dev.workers.dev`);
    expect(run.stdout + run.stderr, "the token is never printed").not.toContain(token.jwt);
    expectProductionUntouched();
    expectNothingElse();
  });

  it("redeploys the branch on its database with one more upload and a fresh token, never one from the environment", { timeout: 180_000 }, async () => {
    const uploadsBefore = cf.uploads().length;
    // Variables a job might carry for production: wrangler lets them override --secrets-file.
    const run = await preview([BRANCH], { DATABASE_AUTH_TOKEN: "production-token", DATABASE_URL: "libsql://production.invalid" });
    expect(run.code, run.stderr + run.stdout).toBe(0);
    expect(turso.requests.filter((r) => r.method === "POST" && r.path === `/organizations/${ORG}/databases`)).toHaveLength(1);
    expect(turso.tokens).toHaveLength(2);
    const uploads = cf.uploads().slice(uploadsBefore);
    expect(uploads.map((u) => `${u.method} ${u.path}`)).toEqual([`POST /accounts/${ACCOUNT}/workers/scripts/${WORKER}/versions`]);
    const bindings = uploads[0]!.metadata!.bindings!;
    expect(bindings.find((b) => b.name === "DATABASE_URL")).toMatchObject({ type: "plain_text", text: sqld.url });
    expect(bindings.find((b) => b.name === "DATABASE_AUTH_TOKEN")).toMatchObject({ type: "secret_text", text: turso.tokens[1]!.jwt });
    expectProductionUntouched();
    expectNothingElse();
  });

  it("fails when the deployed preview does not answer GET /health with 200", { timeout: 180_000 }, async () => {
    health.status = 503;
    try {
      const run = await preview(["fix/broken"]);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/\/health did not answer 200 .*status 503/);
      expect(cf.workers.has("petstore-fix-broken"), "the upload happened; the check failed it").toBe(true);
    } finally {
      health.status = 200;
    }
    expectProductionUntouched();
    expectNothingElse();
  });

  it("refuses a branch whose names are production's, before any request", async () => {
    const before = cf.requests.length + turso.requests.length;
    for (const args of [["main"], ["main", "--destroy"]]) {
      const run = await preview(args);
      expect(run.code, run.stdout).toBe(1);
      expect(run.stderr).toContain(`refusing preview name ${MAIN_DB}`);
    }
    expect(cf.requests.length + turso.requests.length).toBe(before);
    expectProductionUntouched();
  });

  it("tears down the Worker and the database, and fails loudly when it cannot", { timeout: 180_000 }, async () => {
    const ok = await preview([BRANCH, "--destroy"]);
    expect(ok.code, ok.stderr + ok.stdout).toBe(0);
    expect(cf.workers.has(WORKER)).toBe(false);
    expect(turso.databases.has(WORKER)).toBe(false);
    expect(
      cf.requests.some((r) => r.method === "DELETE" && r.path === `/accounts/${ACCOUNT}/workers/services/${WORKER}`),
      "deleted by wrangler delete",
    ).toBe(true);

    // Again: both already gone is not an error.
    const again = await preview([BRANCH, "--destroy"]);
    expect(again.code, again.stderr).toBe(0);

    // A Worker that cannot be deleted: the database is still removed, the command fails.
    cf.failDeletes = "simulated outage";
    try {
      const failed = await preview(["fix/broken", "--destroy"]);
      expect(failed.code).toBe(1);
      expect(failed.stderr).toContain("teardown failed");
      expect(failed.stderr).toContain("Worker petstore-fix-broken");
      expect(cf.workers.has("petstore-fix-broken")).toBe(true);
      expect(turso.databases.has("petstore-fix-broken")).toBe(false);
    } finally {
      cf.failDeletes = undefined;
    }
    // A database that cannot be deleted fails it too.
    turso.databases.set("petstore-stuck", { name: "petstore-stuck", id: "x", group: "default" });
    turso.failDeletes = "delete protection is enabled";
    try {
      const failed = await preview(["stuck", "--destroy"]);
      expect(failed.code).toBe(1);
      expect(failed.stderr).toContain("database petstore-stuck: delete protection is enabled");
    } finally {
      turso.failDeletes = undefined;
    }
    expectProductionUntouched();
    expectNothingElse();
  });

  it("prunes the previews whose branch is not live, and nothing else", { timeout: 180_000 }, async () => {
    for (const name of ["petstore-gone-branch", "petstore-live-branch"]) {
      cf.workers.set(name, { name, bindings: [], crons: [], workersDev: true, versions: 1 });
      turso.databases.set(name, { name, id: name, group: "default" });
    }
    cf.workers.set("other-service", { name: "other-service", bindings: [], crons: [], workersDev: true, versions: 1 });
    const live = join(dir, "live-branches.txt");
    writeFileSync(live, "live/branch\nmain\n");
    const run = await preview(["--prune", "--live-branches", live]);
    expect(run.code, run.stderr + run.stdout).toBe(0);
    expect([...cf.workers.keys()].sort()).toEqual(["other-service", "petstore", "petstore-live-branch"]);
    expect([...turso.databases.keys()].sort()).toEqual(["petstore", "petstore-live-branch", MAIN_DB]);
    expectProductionUntouched();
    expectNothingElse();
  });
});
