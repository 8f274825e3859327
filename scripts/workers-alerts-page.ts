/**
 * `npm run alerts:workers:page`: the Worker's alerts on a schedule (.github/workflows/workers-alerts.yml,
 * docs/runbook.md#running-them-on-a-schedule). Reads the last hour (the longest window) of the `petstore` Worker's lines from the
 * Workers Observability query API (scripts/workers-observability.ts), evaluates docs/monitoring/workers-alerts.json on them with
 * `npm run alerts:workers`'s functions (scripts/workers-alerts.ts), prints the alerts that fire, and POSTs them to the pager as one
 * Alertmanager webhook message. Exit codes: EXIT below. Neither the token nor the pager's URL is ever printed.
 */
import { createHash } from "node:crypto";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { z } from "zod";
import { evaluateWorkersAlerts, type Firing, type Line, loadWorkersAlerts, windowMs } from "./workers-alerts";
import { CLOUDFLARE_API_DEFAULT_BASE_URL, causeOf, eventLine, workerEvents } from "./workers-observability";

/** The Worker whose lines are read (wrangler.toml `name`, docs/deployment.md). */
const SERVICE = "petstore";

/**
 * 0 nothing fires (nothing sent); 1 alerts fire and the pager took them; 2 a setting is missing or bad; 3 no evaluation (the query
 * API failed, or the alerts could not be read; nothing sent); 4 alerts fire but the pager did not take them.
 */
export const EXIT = { quiet: 0, firing: 1, settings: 2, evaluation: 3, pager: 4 } as const;

const httpUrl = (what: string) => z.url({ protocol: /^https?$/, error: (issue) => (issue.input === undefined ? "set" : `an http(s) URL (${what})`) });
const SettingsSchema = z.object({
  CLOUDFLARE_ACCOUNT_ID: z.string({ error: "set" }).regex(/^[0-9a-f]{32}$/, "a Cloudflare account ID (32 hexadecimal digits)"),
  /** A token with Workers Observability read only (not the deploy token). */
  CLOUDFLARE_OBSERVABILITY_TOKEN: z.string({ error: "set" }),
  PAGER_WEBHOOK_URL: httpUrl("the pager's webhook"),
  CLOUDFLARE_API_BASE_URL: httpUrl("the Cloudflare API").default(CLOUDFLARE_API_DEFAULT_BASE_URL),
  /** GitHub Actions' own variables: the run's page, linked from the page. */
  GITHUB_SERVER_URL: z.string().optional(),
  GITHUB_REPOSITORY: z.string().optional(),
  GITHUB_RUN_ID: z.string().optional(),
});
type Settings = z.output<typeof SettingsSchema>;

/** A setting missing or bad: exit 2. */
class SettingsError extends Error {}

/**
 * The settings from `env` (a non-empty string each, trimmed; anything else reads as unset).
 * @throws SettingsError "Invalid configuration: X: must be …; Y: …", naming every bad variable and never its value (they are secrets).
 */
export function readSettings(env: NodeJS.ProcessEnv): Settings {
  const raw = Object.fromEntries(Object.keys(SettingsSchema.shape).map((name) => [name, env[name]?.trim() || undefined]));
  const parsed = SettingsSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map(({ path: [name], message }) => `${String(name)}: must be ${message}`);
  throw new SettingsError(`Invalid configuration: ${problems.join("; ")}`);
}

/** The workflow run's page on GitHub, or "" outside GitHub Actions. */
function runUrl(settings: Settings): string {
  const { GITHUB_SERVER_URL: server, GITHUB_REPOSITORY: repository, GITHUB_RUN_ID: run } = settings;
  return server && repository && run ? `${server}/${repository}/actions/runs/${run}` : "";
}

/**
 * The Alertmanager webhook message (version 4: https://prometheus.io/docs/alerting/latest/configuration/#webhook_config) for
 * `firing` at `now`: one group, an alert per firing alert and group, labelled `alertname`, `severity`, `runtime: workers` and the
 * alert's own labels (`id`), annotated `summary`, `runbook_url` and `value`; `link` (the run's page) as `externalURL` and `generatorURL`.
 */
export function pagerMessage(firing: Firing[], now: Date, link: string): Record<string, unknown> {
  const common = { runtime: "workers", service: SERVICE };
  const alerts = firing.map((f) => {
    const labels = { alertname: f.alert, severity: f.severity, ...common, ...f.labels };
    return {
      status: "firing",
      labels,
      annotations: { summary: f.summary, runbook_url: f.runbook_url, value: String(f.value) },
      startsAt: now.toISOString(),
      endsAt: "0001-01-01T00:00:00Z",
      generatorURL: link,
      fingerprint: createHash("sha256").update(JSON.stringify(labels)).digest("hex").slice(0, 16),
    };
  });
  const groupKey = `{}:{runtime="workers",service="${SERVICE}"}`;
  return {
    version: "4",
    groupKey,
    truncatedAlerts: 0,
    status: "firing",
    receiver: "pager",
    groupLabels: common,
    commonLabels: common,
    commonAnnotations: {},
    externalURL: link,
    alerts,
  };
}

/** POST `message` to the pager. @throws Error "the pager webhook answered 500" / "did not answer: ECONNREFUSED" (never its URL). */
async function page(url: string, message: Record<string, unknown>): Promise<void> {
  let response: Response;
  try {
    response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(message),
      signal: AbortSignal.timeout(30_000),
    });
  } catch (error) {
    throw new Error(`the pager webhook did not answer: ${causeOf(error)}`);
  }
  await response.body?.cancel();
  if (!response.ok) throw new Error(`the pager webhook answered ${response.status}`);
}

/** `text` with every secret of `settings` replaced: a last guard, whatever a message holds. */
function redacted(text: string, settings: Partial<Settings>): string {
  const secrets = [settings.CLOUDFLARE_OBSERVABILITY_TOKEN, settings.PAGER_WEBHOOK_URL].filter((s): s is string => Boolean(s));
  return secrets.reduce((out, secret) => out.replaceAll(secret, "[redacted]"), text);
}

/** The alerts that fire at `now` over the last hour (the longest window) of the Worker's lines, and what they were evaluated on. */
async function evaluate(settings: Settings, now: number): Promise<{ firing: Firing[]; summary: string }> {
  const alerts = loadWorkersAlerts();
  const from = now - Math.max(...alerts.flatMap((alert) => alert.windows.map(windowMs)));
  const { CLOUDFLARE_API_BASE_URL: baseUrl, CLOUDFLARE_ACCOUNT_ID: accountId, CLOUDFLARE_OBSERVABILITY_TOKEN: token } = settings;
  const events = await workerEvents({ baseUrl, accountId, token, service: SERVICE, from, to: now });
  const lines = events.flatMap<Line>((event) => eventLine(event) ?? []);
  const firing = evaluateWorkersAlerts(alerts, lines, now);
  const window = `${new Date(from).toISOString()} to ${new Date(now).toISOString()}`;
  return { firing, summary: `${SERVICE}: ${lines.length} lines in ${events.length} events, ${window}: ${firing.length} alerts fire` };
}

/** One run: read, evaluate, print, page. Returns the exit code (EXIT); every line it writes is redacted. */
export async function main(env: NodeJS.ProcessEnv, now = Date.now()): Promise<number> {
  let settings: Settings;
  try {
    settings = readSettings(env);
  } catch (error) {
    console.error(error instanceof SettingsError ? error.message : String(error));
    return EXIT.settings;
  }
  const say = (text: string) => console.log(redacted(text, settings));
  const fail = (error: unknown) => console.error(redacted(error instanceof Error ? error.message : String(error), settings));
  let result: Awaited<ReturnType<typeof evaluate>>;
  try {
    result = await evaluate(settings, now);
  } catch (error) {
    fail(error);
    return EXIT.evaluation;
  }
  say(result.summary);
  for (const alert of result.firing) say(JSON.stringify(alert));
  if (result.firing.length === 0) return EXIT.quiet;
  try {
    await page(settings.PAGER_WEBHOOK_URL, pagerMessage(result.firing, new Date(now), runUrl(settings)));
  } catch (error) {
    fail(error);
    return EXIT.pager;
  }
  say(`paged: ${result.firing.map((f) => f.alert).join(", ")}`);
  return EXIT.firing;
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  process.exit(await main(process.env));
}
