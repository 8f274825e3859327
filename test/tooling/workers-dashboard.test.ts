/**
 * docs/monitoring/workers-dashboard.json (docs/runbook.md#a-dashboard-for-the-workers-alerts) is usable: it is what
 * `npm run dashboard:workers` makes of docs/monitoring/workers-alerts.json; it is a well-formed Grafana dashboard whose queries name
 * only declared variables and hold no secret; each alert has its panels, with its threshold and a bucket of each of its windows; and
 * each panel, run as Grafana and Infinity run it (test/support/grafana-infinity.ts) against the fake telemetry query API
 * (test/support/fake-cloudflare-api.ts), which refuses what the API reference does not allow, shows on the lines a real local Worker
 * wrote (test/support/recorded-telemetry.ts) the values that scripts/workers-alerts.ts evaluates on the same lines.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { evaluateWorkersAlerts, type Firing, loadWorkersAlerts, type WorkersAlert, windowMs } from "../../scripts/workers-alerts";
import { WORKERS_DASHBOARD_PATH, workersDashboardText } from "../../scripts/workers-dashboard";
import { FakeCloudflareApi } from "../support/fake-cloudflare-api";
import { interpolate, type RunnablePanel, runPanel, seriesOf, type Target } from "../support/grafana-infinity";
import { type RecordedLine, recorded, telemetryEvents } from "../support/recorded-telemetry";

const ACCOUNT = "0123456789abcdef0123456789abcdef";
const TOKEN = "observability-read-token-dash";
const PLUGIN = "yesoreyeram-infinity-datasource";
/** `${name}` as the dashboard spells a Grafana variable. */
const variable = (name: string) => `\${${name}}`;

interface Panel extends RunnablePanel {
  id: number;
  datasource: { type: string; uid: string };
  gridPos: { h: number; w: number; x: number; y: number };
  links: { url: string }[];
  fieldConfig: { defaults: { thresholds: { steps: { color: string; value: number | null }[] } } };
  targets: (Target & { parser: string; format: string })[];
}

const dashboard = JSON.parse(readFileSync(WORKERS_DASHBOARD_PATH, "utf8")) as {
  uid: string;
  title: string;
  schemaVersion: number;
  __requires: { type: string; id: string; version: string }[];
  templating: { list: { name: string; type: string; query: string }[] };
  panels: Panel[];
};
const alerts = loadWorkersAlerts();
const variables = new Set(dashboard.templating.list.map((v) => v.name));

/** The panels linked to `alert`'s runbook entry. */
const panelsOf = (alert: WorkersAlert) =>
  dashboard.panels.filter((p) => p.links.some((link) => link.url.replace(variable("runbook"), "docs/runbook.md") === alert.runbook_url));
/** The value at which a panel turns red (its threshold line), if any. */
const threshold = (panel: Panel) => panel.fieldConfig.defaults.thresholds.steps.find((step) => step.color === "red")?.value;
/** A target's request body at `range` (ms): its macros and variables replaced, parsed. */
const request = (target: Target, range = { from: 0, to: 3_600_000 }) =>
  JSON.parse(interpolate(target.url_options.data, { range, variables: { service: "petstore", account_id: ACCOUNT } })) as Record<string, unknown>;

describe("docs/monitoring/workers-dashboard.json", () => {
  it("is what npm run dashboard:workers makes of docs/monitoring/workers-alerts.json", () => {
    expect(readFileSync(WORKERS_DASHBOARD_PATH, "utf8")).toBe(workersDashboardText(alerts));
  });

  it("is a well-formed Grafana dashboard: unique panel ids, declared data source and variables, no secret", () => {
    expect([typeof dashboard.uid, typeof dashboard.title, dashboard.schemaVersion >= 36]).toEqual(["string", "string", true]);
    expect(dashboard.__requires).toContainEqual(expect.objectContaining({ type: "datasource", id: PLUGIN }));
    expect(dashboard.templating.list).toContainEqual(expect.objectContaining({ name: "datasource", type: "datasource", query: PLUGIN }));
    expect(new Set(dashboard.panels.map((p) => p.id)).size).toBe(dashboard.panels.length);
    expect(new Set(dashboard.panels.map((p) => `${p.gridPos.x},${p.gridPos.y}`)).size).toBe(dashboard.panels.length);
    for (const panel of dashboard.panels) {
      expect(panel.datasource, panel.title).toEqual({ type: PLUGIN, uid: variable("datasource") });
      expect(panel.gridPos.x + panel.gridPos.w, panel.title).toBeLessThanOrEqual(24);
      expect(new Set(panel.targets.map((t) => t.refId)).size, panel.title).toBe(panel.targets.length);
      for (const target of panel.targets) {
        expect([target.parser, target.format, target.url_options.method], panel.title).toEqual(["jq-backend", "timeseries", "POST"]);
        // Every `${name}` is a dashboard variable or one of Infinity's time macros; no jq variable shadows a dashboard variable.
        const named = [...`${target.url} ${target.url_options.data}`.matchAll(/\$\{([\w.]+)\}/g)].map((m) => m[1]!);
        expect(
          named.filter((name) => !variables.has(name) && !["__timeFrom", "__timeTo"].includes(name)),
          panel.title,
        ).toEqual([]);
        expect(
          [...target.root_selector.matchAll(/\$(\w+)/g)].filter((m) => variables.has(m[1]!)),
          panel.title,
        ).toEqual([]);
      }
    }
    expect(readFileSync(WORKERS_DASHBOARD_PATH, "utf8")).not.toMatch(/authorization|bearer|token/i);
  });

  it("gives each alert a panel per window, at its threshold, with buckets of that window", () => {
    for (const alert of alerts) {
      const panels = panelsOf(alert).filter((panel) => threshold(panel) === alert.above);
      expect(panels.length, `${alert.alert}: a panel per window at ${alert.above}`).toBe(alert.windows.length);
      alert.windows.forEach((window, i) => {
        const targets = panels[i]!.targets;
        if (alert.each) {
          expect(request(targets[0]!).view, alert.alert).toBe("events");
          expect(targets[0]!.root_selector, alert.alert).toContain(`$at / ${windowMs(window)} | floor`);
          return;
        }
        // The share's two counts, in buckets of the window at the time picker's ranges (1 h: 12 of 5 min, 6 h: 6 of 1 h, …).
        expect(targets.map((t) => request(t).view)).toEqual(["calculations", "calculations"]);
        for (const hours of [1, 3, 6, 12, 24]) {
          const range = { from: 0, to: hours * 3_600_000 };
          const buckets = targets.map((t) => request(t, range).granularity);
          expect(buckets, `${alert.alert} ${window} over ${hours} h`).toEqual(targets.map(() => Math.max(1, range.to / windowMs(window))));
        }
      });
      for (const [key, match] of Object.entries(alert.ratio?.of ?? {})) {
        if (typeof match !== "object" || Array.isArray(match)) continue;
        const objective = panelsOf(alert).find((panel) => threshold(panel) === match.above);
        expect((request(objective!.targets[0]!).parameters as { calculations: unknown[] }).calculations, alert.alert).toEqual([
          { operator: "p99", key, keyType: "number", alias: "p99" },
        ]);
      }
    }
  });
});

/** The hour every panel shows: lines a minute before its end, so that each window's bucket ending at T holds them all. */
const T = Date.UTC(2026, 10, 29, 4, 0, 0);

/** A webhook dispatch line of the recorded shape at `at`, with `subscriptions`. */
function dispatchLine(at: number, subscriptions: Record<string, number | boolean>[]): RecordedLine {
  return { time: new Date(at).toISOString(), level: "info", msg: "webhook dispatch", attempted: 1, delivered: 0, retried: 0, givenUp: 0, subscriptions };
}

describe("the dashboard's panels against the query API, on a real Worker's lines", () => {
  let cf: FakeCloudflareApi;
  const lines = [
    ...recorded("healthy", T - 60_000),
    ...recorded("faults", T - 60_000),
    // More give-ups by subscription 2 (a second in the last 15 min, one before it) and a backlog of subscription 3 before the last 5 min.
    // Subscription 4 is paused: its backlog's age is no alert's.
    dispatchLine(T - 120_000, [
      { id: 2, enabled: true, givenUp: 2, oldestAgeSeconds: 420 },
      { id: 4, enabled: false, givenUp: 0, oldestAgeSeconds: 900 },
    ]),
    dispatchLine(T - 20 * 60_000, [{ id: 2, enabled: true, givenUp: 3, oldestAgeSeconds: 0 }]),
    dispatchLine(T - 7 * 60_000, [{ id: 3, enabled: true, givenUp: 0, oldestAgeSeconds: 400 }]),
  ];
  /** Every alert's value per group at T on `lines`, whether or not it crosses its threshold. */
  const values: Firing[] = evaluateWorkersAlerts(
    alerts.map((alert) => ({ ...alert, above: Number.NEGATIVE_INFINITY })),
    lines,
    T,
  );
  const run = () => ({ variables: { account_id: ACCOUNT, service: "petstore" }, range: { from: T - 3_600_000, to: T }, apiBaseUrl: cf.baseUrl, token: TOKEN });

  beforeAll(async () => {
    cf = await FakeCloudflareApi.start({ accountId: ACCOUNT, apiToken: TOKEN, subdomain: "unused" });
    // Another Worker's faults, which no panel may show.
    cf.telemetryEvents = [...telemetryEvents(lines), ...telemetryEvents(recorded("faults", T - 60_000), "another-worker")];
  });
  afterAll(async () => {
    await cf?.close();
  });

  it("every panel's requests are ones the API takes, and each share shows the alert's value in the bucket ending at the hour's end", async () => {
    for (const panel of dashboard.panels) {
      const series = seriesOf(await runPanel(panel, run()));
      expect(series.length, panel.title).toBeGreaterThan(0);
      const alert = alerts.find((a) => panelsOf(a).includes(panel))!;
      if (!alert.ratio || threshold(panel) !== alert.above) continue;
      const [share] = series;
      const window = windowMs(alert.windows.find((w) => panel.title.endsWith(`per ${w}`))!);
      expect(share!.points, panel.title).toEqual([[T - window, values.find((v) => v.alert === alert.alert)!.value]]);
    }
    expect(cf.unknown).toEqual([]);
  });

  it("the request rate adds up to the request lines, by level", async () => {
    const rate = panelsOf(alerts.find((a) => a.alert === "PetstoreErrorRate")!).find((p) => threshold(p) === undefined)!;
    const series = seriesOf(await runPanel(rate, run()));
    const requests = (level: string) => lines.filter((line) => line.msg === "request" && line.level === level).length;
    // A point is a rate over its 5-minute bucket: times 300 s, the bucket's lines.
    expect(Object.fromEntries(series.map((s) => [s.labels.level, Math.round(s.points[0]![1] * 300)]))).toEqual({
      info: requests("info"),
      error: requests("error"),
    });
  });

  it("p99 of each kind is the 99th percentile (nearest rank) of its lines' durationMs", async () => {
    for (const alert of alerts.filter((a) => a.ratio && "durationMs" in a.ratio.of)) {
      const bound = (alert.ratio!.of.durationMs as { above: number }).above;
      const panel = panelsOf(alert).find((p) => threshold(p) === bound)!;
      const methods = alert.lines.method as string[];
      const durations = lines
        .filter((line) => line.msg === "request" && methods.includes(String(line.method)))
        .map((line) => line.durationMs as number)
        .sort((a, b) => a - b);
      const [p99] = seriesOf(await runPanel(panel, run()));
      expect(p99!.points, panel.title).toEqual([[T - 300_000, durations[Math.ceil(0.99 * durations.length) - 1]]]);
    }
  });

  it("per subscription: give-ups summed per 15 min and the last oldest age per 5 min, as the alerts evaluate them", async () => {
    const shown = async (name: string) => {
      const panel = panelsOf(alerts.find((a) => a.alert === name)!)[0]!;
      return Object.fromEntries(seriesOf(await runPanel(panel, run())).map((s) => [s.labels.id, s.points]));
    };
    const at = (name: string, id: string) => values.find((v) => v.alert === name && v.labels.id === id)!.value;
    expect(await shown("PetstoreWebhooksGivingUp")).toEqual({
      "1": [[T - 900_000, 0]],
      "2": [
        [T - 1_800_000, 3],
        [T - 900_000, at("PetstoreWebhooksGivingUp", "2")],
      ],
      "3": [[T - 900_000, 0]],
      "4": [[T - 900_000, 0]],
    });
    expect(at("PetstoreWebhooksGivingUp", "2")).toBe(3);
    // Subscription 2's last line of the last bucket says 0 (the recorded one, after the one of 420 s); 3's 400 s is in the bucket before.
    expect(await shown("PetstoreWebhookBacklogAge")).toEqual({
      "1": [[T - 300_000, at("PetstoreWebhookBacklogAge", "1")]],
      "2": [
        [T - 1_200_000, 0],
        [T - 300_000, at("PetstoreWebhookBacklogAge", "2")],
      ],
      "3": [[T - 600_000, 400]],
    });
    expect(values.filter((v) => v.alert === "PetstoreWebhookBacklogAge").map((v) => v.labels.id)).not.toContain("4");
  });
});
