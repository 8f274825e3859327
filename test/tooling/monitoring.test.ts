/**
 * The alerts and the dashboard in docs/monitoring/ (docs/runbook.md#alerts-on-node): `promtool check rules` accepts the rules and
 * `promtool test rules` passes their unit tests; after a scripted flow against the real server, a real Prometheus that scrapes it and
 * loads the rules answers every dashboard panel's query with data.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { loadWorkersAlerts } from "../../scripts/workers-alerts";
import { freePort, type Prometheus, startPrometheus } from "../support/prometheus";
import { call, REPO_ROOT, type ServerProcess, startServer } from "../support/server-process";

const MONITORING = join(REPO_ROOT, "docs/monitoring");
let dir: string | undefined;
let server: ServerProcess | undefined;
let prometheus: Prometheus | undefined;

afterAll(async () => {
  await prometheus?.stop();
  if (server && !server.exited()) await server.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Run promtool with `args` in docs/monitoring; its output when it fails. */
function promtool(...args: string[]): { status: number | null; output: string } {
  const run = spawnSync("promtool", args, { cwd: MONITORING, encoding: "utf8" });
  return { status: run.status, output: run.stdout + run.stderr };
}

it("promtool checks the rules and passes their unit tests", () => {
  const check = promtool("check", "rules", "alerts.yml");
  expect(check.output).toContain("SUCCESS: 11 rules found");
  expect(check.status).toBe(0);
  const test = promtool("test", "rules", "alerts.test.yml");
  expect(test.output).toContain("SUCCESS");
  expect(test.status).toBe(0);
});

/** The anchors of docs/runbook.md's headings, as GitHub writes them (lower case, punctuation dropped, spaces to hyphens). */
function runbookAnchors(): Set<string> {
  const headings = readFileSync(join(REPO_ROOT, "docs/runbook.md"), "utf8").match(/^#+ .+$/gm) ?? [];
  return new Set(
    headings.map((heading) =>
      heading
        .replace(/^#+ /, "")
        .toLowerCase()
        .replace(/[^a-z0-9 _-]/g, "")
        .replace(/ /g, "-"),
    ),
  );
}

it("every rule has a severity, a summary and a runbook link to its own entry in docs/runbook.md", () => {
  const text = readFileSync(join(MONITORING, "alerts.yml"), "utf8");
  const alerts = text.split("- alert: ").slice(1);
  expect(alerts.length).toBe(11);
  const anchors = runbookAnchors();
  for (const alert of alerts) {
    const name = alert.split("\n")[0]!;
    expect(alert, name).toMatch(/severity: (critical|warning)[\s\S]*summary:[\s\S]*runbook_url: docs\/runbook\.md#/);
    const anchor = /runbook_url: docs\/runbook\.md#(\S+)/.exec(alert)![1]!;
    expect([anchor, anchors.has(anchor)], name).toEqual([name.toLowerCase(), true]);
  }
});

it("every Workers alert links its own entry in docs/runbook.md, under a name the Node rules also use", () => {
  const workers = loadWorkersAlerts();
  const nodeRules = readFileSync(join(MONITORING, "alerts.yml"), "utf8");
  const anchors = runbookAnchors();
  expect(workers.length).toBe(5);
  for (const { alert, runbook_url } of workers) {
    expect([runbook_url, nodeRules.includes(`- alert: ${alert}\n`)], alert).toEqual([`docs/runbook.md#${alert.toLowerCase()}`, true]);
    expect(anchors.has(alert.toLowerCase()), alert).toBe(true);
  }
});

it("every dashboard panel's query returns data from a real Prometheus after a scripted flow", async () => {
  dir = mkdtempSync(join(tmpdir(), "petstore-monitoring-"));
  const metricsPort = await freePort();
  server = await startServer({
    databaseUrl: `file:${join(dir, "petstore.db")}`,
    env: { METRICS_PORT: String(metricsPort), WEBHOOK_POLL_MS: "100", WEBHOOKS_ALLOW_PRIVATE: "true" },
  });
  // A subscriber whose port refuses: its attempts fail and its backlog ages (the per-subscription panels).
  const subscribed = await call(
    server.url,
    "POST",
    "/webhooks",
    { url: "http://127.0.0.1:9/refused", events: ["category.created"] },
    { key: server.bootstrapKey },
  );
  expect(subscribed.status).toBe(201);
  prometheus = await startPrometheus([`127.0.0.1:${metricsPort}`], [join(MONITORING, "alerts.yml")]);
  const flow = async () => {
    await call(server!.url, "GET", "/pets?limit=3");
    await call(server!.url, "GET", "/pets?limit=3");
    await call(server!.url, "GET", "/pets/987654");
    await call(server!.url, "POST", "/categories", { name: `c${Date.now()}`, description: "d" }, { key: server!.bootstrapKey });
  };
  await flow();
  const dashboard = JSON.parse(readFileSync(join(MONITORING, "dashboard.json"), "utf8")) as { panels: { title: string; targets: { expr: string }[] }[] };
  for (const panel of dashboard.panels) {
    for (const { expr } of panel.targets) {
      // Rates need two scrapes with traffic between them.
      const answer = await prometheus.queryUntil(expr).catch(() => []);
      if (answer.length === 0) await flow();
      expect((answer.length > 0 ? answer : await prometheus.queryUntil(expr)).length, panel.title).toBeGreaterThan(0);
    }
  }
}, 120_000);
