/**
 * `npm run alerts:workers:page` (scripts/workers-alerts-page.ts, docs/runbook.md#running-them-on-a-schedule) run for real, as a child
 * process, against local stand-ins: the Workers Observability telemetry query of the fake Cloudflare API
 * (test/support/fake-cloudflare-api.ts) and a pager receiver (test/support/webhook-receiver.ts). The events are built from lines a real
 * local Worker wrote (test/support/recorded-telemetry.ts), moved to the last minute.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeCloudflareApi, type FakeTelemetryEvent } from "../support/fake-cloudflare-api";
import { recorded, telemetryEvents as events } from "../support/recorded-telemetry";
import { Receiver } from "../support/webhook-receiver";
import { type Run, runScript } from "../support/run-script";

const ACCOUNT = "0123456789abcdef0123456789abcdef";
const TOKEN = "observability-read-token-7f3a9c";
/** The pager's URL holds its own secret, as real webhook URLs do: neither may be printed. */
const PAGER_SECRET = "pager-key-51d0e2";
const QUERY_PATH = `/accounts/${ACCOUNT}/workers/observability/telemetry/query`;

/** The invocation log Workers Logs adds to every request: no line of the Worker's. */
const invocationLog = (): FakeTelemetryEvent => ({
  dataset: "cloudflare-workers",
  timestamp: Date.now() - 30_000,
  source: { request: { method: "GET", url: "https://petstore.example/health" }, response: { status: 200 } },
  $metadata: { id: "petstore-invocation", service: "petstore", type: "cf-worker-event", message: "GET https://petstore.example/health" },
});

/** The script as `npm run alerts:workers:page` runs it, with none of this process's Cloudflare, pager or GitHub settings but `env`; it never prints a secret. */
async function runPage(env: Record<string, string>): Promise<Run> {
  const run = await spawnPage(env);
  expect(run.stdout + run.stderr, "no secret is printed").not.toMatch(new RegExp(`${TOKEN}|${PAGER_SECRET}`));
  return run;
}

function spawnPage(env: Record<string, string>): Promise<Run> {
  return runScript("scripts/workers-alerts-page.ts", [], { dropped: /^(CLOUDFLARE_|PAGER_|GITHUB_)/, env, timeoutMs: 60_000 });
}

describe("npm run alerts:workers:page against a local query API and pager", () => {
  let cf: FakeCloudflareApi;
  let pager: Receiver;
  beforeAll(async () => {
    cf = await FakeCloudflareApi.start({ accountId: ACCOUNT, apiToken: TOKEN, subdomain: "unused" });
    pager = await Receiver.start();
  });
  afterAll(async () => {
    await cf?.close();
    await pager?.close();
  });

  /** Settings for a run paging `path` of the receiver (under the pager's secret). */
  const settings = (path: string) => ({
    CLOUDFLARE_API_BASE_URL: cf.baseUrl,
    CLOUDFLARE_ACCOUNT_ID: ACCOUNT,
    CLOUDFLARE_OBSERVABILITY_TOKEN: TOKEN,
    PAGER_WEBHOOK_URL: pager.url(`/hooks/${PAGER_SECRET}/${path}`),
  });
  const queries = () => cf.requests.filter((r) => r.path === QUERY_PATH);

  it("the Worker's faults fire: the pager gets them in one Alertmanager message, exit 1", async () => {
    const lines = [...recorded("healthy"), ...recorded("faults")];
    cf.telemetryEvents = [...events(lines), invocationLog()];
    const before = queries().length;
    const started = Date.now();
    const run = await runPage(settings("firing"));

    expect(run.code, run.stderr).toBe(1);
    const pages = pager.at(`/hooks/${PAGER_SECRET}/firing`);
    expect(pages).toHaveLength(1);
    const message = JSON.parse(pages[0]!.body);
    expect(message).toMatchObject({ version: "4", status: "firing", commonLabels: { runtime: "workers", service: "petstore" } });
    expect(message.alerts.map((a: { labels: Record<string, string> }) => a.labels)).toEqual([
      { alertname: "PetstoreErrorRate", severity: "critical", runtime: "workers", service: "petstore" },
      { alertname: "PetstoreWebhooksGivingUp", severity: "warning", runtime: "workers", service: "petstore", id: "2" },
    ]);
    expect(message.alerts[0]).toMatchObject({ status: "firing", annotations: { runbook_url: "docs/runbook.md#petstoreerrorrate" } });
    expect(run.stdout).toContain(`petstore: ${lines.length} lines in ${lines.length + 1} events`);
    expect(run.stdout).toContain('"alert":"PetstoreErrorRate"');

    // The query as the API reference writes it, one page at a time: the fake answers 10 events a page, the script follows the cursor.
    const sent = queries().slice(before);
    expect(sent).toHaveLength(Math.ceil((lines.length + 1) / 10) + 1);
    const bodies = sent.map((r) => r.json as { timeframe: { from: number; to: number }; offset?: string; [key: string]: unknown });
    expect(bodies[0]).toMatchObject({
      view: "events",
      parameters: { filters: [{ key: "$metadata.service", operation: "eq", type: "string", value: "petstore" }] },
    });
    expect(bodies[0]!.timeframe.to - bodies[0]!.timeframe.from).toBe(3_600_000);
    expect(bodies[0]!.timeframe.to).toBeGreaterThanOrEqual(started);
    expect(bodies[0]!.offset).toBeUndefined();
    expect(new Set(bodies.slice(1).map((b) => b.offset)).size).toBe(bodies.length - 1);
    expect(cf.unknown).toEqual([]);
  });

  it("a healthy Worker, beside another Worker's faults: nothing fires, no page, exit 0", async () => {
    cf.telemetryEvents = [...events(recorded("healthy")), ...events(recorded("faults"), "another-worker"), invocationLog()];
    const run = await runPage(settings("quiet"));

    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(`petstore: ${recorded("healthy").length} lines`);
    expect(run.stdout).toContain(": 0 alerts fire");
    expect(pager.at(`/hooks/${PAGER_SECRET}/quiet`)).toEqual([]);
  });

  it.each([
    [401, 10000, "Authentication error"],
    [500, 10002, "Internal server error"],
  ])("the query API answers %i: one line naming it, exit 3, no page", async (status, code, said) => {
    cf.telemetryEvents = events(recorded("faults"));
    cf.failTelemetry = { status, code, message: said };
    try {
      const run = await runPage(settings(`failed-${status}`));
      expect(run.code).toBe(3);
      expect(run.stderr.trim().split("\n")).toEqual([
        `Cloudflare Workers Observability query API (POST /accounts/{account_id}/workers/observability/telemetry/query) answered ${status}: ${said} (${code})`,
      ]);
      expect(pager.at(`/hooks/${PAGER_SECRET}/failed-${status}`)).toEqual([]);
    } finally {
      cf.failTelemetry = undefined;
    }
  });

  it("the pager refuses: alerts printed, one line saying so, exit 4", async () => {
    cf.telemetryEvents = events(recorded("faults"));
    pager.on(`/hooks/${PAGER_SECRET}/refusing`, () => 503);
    const run = await runPage(settings("refusing"));

    expect(run.code).toBe(4);
    expect(run.stdout).toContain('"alert":"PetstoreErrorRate"');
    expect(run.stderr.trim()).toBe("the pager webhook answered 503");
    expect(pager.at(`/hooks/${PAGER_SECRET}/refusing`)).toHaveLength(1);
  });

  it("settings missing or bad: every one named, none of their values, exit 2, nothing asked", async () => {
    const before = cf.requests.length;
    const run = await runPage({ CLOUDFLARE_ACCOUNT_ID: "not-an-account", PAGER_WEBHOOK_URL: `ftp://${PAGER_SECRET}@pager.invalid/` });

    expect(run.code).toBe(2);
    expect(run.stderr.trim()).toBe(
      "Invalid configuration: CLOUDFLARE_ACCOUNT_ID: must be a Cloudflare account ID (32 hexadecimal digits); " +
        "CLOUDFLARE_OBSERVABILITY_TOKEN: must be set; PAGER_WEBHOOK_URL: must be an http(s) URL (the pager's webhook)",
    );
    expect(cf.requests.length).toBe(before);
  });
});
