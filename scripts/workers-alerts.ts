/**
 * The Worker's alerts (docs/monitoring/workers-alerts.json) evaluated over its JSON log lines (docs/runbook.md#alerts-on-workers):
 * `npm run alerts:workers < lines.jsonl` prints the alerts that fire and exits 1 when any does. It reads the service's own lines, or
 * `wrangler tail --format json` events, or a Workers Logs export, one JSON object a line; test/worker/workers-alerts.test.ts runs the
 * same evaluation on what a real local Worker writes, and scripts/workers-alerts-page.ts on a schedule, on Workers Logs.
 */
import { readFileSync } from "node:fs";

/** A field's test: a value, one of several, or a bound. */
type Match = string | number | boolean | (string | number)[] | { above: number };

/** One alert of docs/monitoring/workers-alerts.json. */
export interface WorkersAlert {
  alert: string;
  severity: "critical" | "warning";
  summary: string;
  runbook_url: string;
  /** The lines it reads: every field must match. */
  lines: Record<string, Match>;
  /** Windows ending now, each of which must cross `above` (a burn rate's long and short windows). */
  windows: string[];
  above: number;
  /** The value: the share of `lines` that also match `of` … */
  ratio?: { of: Record<string, Match> };
  /** … or, per element of the array field `each` (those matching `where`) grouped by its `by` field, the `sum` or the `last` value of a numeric field. */
  each?: string;
  where?: Record<string, Match>;
  by?: string;
  sum?: string;
  last?: string;
}

/** An alert that fires, with its group's value and label. */
export interface Firing {
  alert: string;
  severity: string;
  labels: Record<string, string>;
  value: number;
  summary: string;
  runbook_url: string;
}

/** One JSON line the Worker logged, parsed. */
export type Line = Record<string, unknown>;

/** The alerts of docs/monitoring/workers-alerts.json. */
export function loadWorkersAlerts(path = new URL("../docs/monitoring/workers-alerts.json", import.meta.url)): WorkersAlert[] {
  return (JSON.parse(readFileSync(path, "utf8")) as { alerts: WorkersAlert[] }).alerts;
}

/** Milliseconds of a window such as `5m`, `1h`, `30s`. @throws Error for another form. */
export function windowMs(window: string): number {
  const [, amount, unit] = /^(\d+)([smh])$/.exec(window) ?? [];
  if (!amount || !unit) throw new Error(`a window is a number and s, m or h: ${window}`);
  return Number(amount) * { s: 1_000, m: 60_000, h: 3_600_000 }[unit as "s" | "m" | "h"];
}

/** True when `value` passes `match`. */
function matches(value: unknown, match: Match): boolean {
  if (Array.isArray(match)) return match.includes(value as string | number);
  if (typeof match === "object") return typeof value === "number" && value > match.above;
  return value === match;
}

const every = (line: Line, fields: Record<string, Match>) => Object.entries(fields).every(([key, match]) => matches(line[key], match));

/** The alert's value per group over `lines` (already its window's): one group `""` for a ratio, one per `by` value for `each`. */
function values(alert: WorkersAlert, lines: Line[]): Map<string, number> {
  if (alert.ratio) {
    const hits = lines.filter((line) => every(line, alert.ratio!.of)).length;
    return new Map(lines.length > 0 ? [["", hits / lines.length]] : []);
  }
  const byGroup = new Map<string, number>();
  for (const line of lines)
    for (const element of (line[alert.each!] as Line[] | undefined) ?? []) {
      if (alert.where && !every(element, alert.where)) continue;
      const group = String(element[alert.by!]);
      const value = Number(element[(alert.sum ?? alert.last)!] ?? 0);
      byGroup.set(group, alert.sum ? (byGroup.get(group) ?? 0) + value : value);
    }
  return byGroup;
}

/** The summary with `{{value}}` (a share as a percentage, else the number) and `{{<by>}}` filled in. */
function summary(alert: WorkersAlert, group: string, value: number): string {
  const shown = alert.ratio ? `${Math.round(value * 1000) / 10}%` : String(Math.round(value));
  return alert.summary.replaceAll("{{value}}", shown).replaceAll(`{{${alert.by}}}`, group);
}

/**
 * The alerts that fire at `now` (ms) over `lines` (JSON log lines with an ISO `time`, in any order): a group fires when its value is
 * above the threshold in every window.
 */
export function evaluateWorkersAlerts(alerts: WorkersAlert[], lines: Line[], now: number): Firing[] {
  const firing: Firing[] = [];
  const ordered = [...lines].sort((a, b) => Date.parse(String(a.time)) - Date.parse(String(b.time)));
  for (const alert of alerts) {
    const read = ordered.filter((line) => every(line, alert.lines));
    const perWindow = alert.windows.map((window) =>
      values(
        alert,
        read.filter((line) => Date.parse(String(line.time)) > now - windowMs(window)),
      ),
    );
    for (const [group, value] of perWindow[0] ?? []) {
      if (!perWindow.every((byGroup) => (byGroup.get(group) ?? Number.NEGATIVE_INFINITY) > alert.above)) continue;
      const labels = alert.by ? { [alert.by]: group } : {};
      firing.push({ alert: alert.alert, severity: alert.severity, labels, value, summary: summary(alert, group, value), runbook_url: alert.runbook_url });
    }
  }
  return firing;
}

/** The service's JSON lines in `text`: its own lines, or the messages of `wrangler tail --format json` events. */
export function logLines(text: string): Line[] {
  const lines: Line[] = [];
  for (const raw of text.split("\n").filter((line) => line.startsWith("{"))) {
    const parsed = JSON.parse(raw) as Line & { logs?: { message?: unknown[] }[] };
    if (!parsed.logs) lines.push(parsed);
    for (const log of parsed.logs ?? [])
      for (const message of log.message ?? []) if (typeof message === "string" && message.startsWith("{")) lines.push(JSON.parse(message) as Line);
  }
  return lines;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const firing = evaluateWorkersAlerts(loadWorkersAlerts(), logLines(readFileSync(0, "utf8")), Date.now());
  for (const alert of firing) console.log(JSON.stringify(alert));
  process.exitCode = firing.length > 0 ? 1 : 0;
}
