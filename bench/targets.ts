/**
 * The service's performance targets (one run, 50 connections): what each is
 * measured on and its bound, and the table `npm run bench` prints last, each
 * target beside this run's result. Ratios are to the bare-Hono baseline of
 * the same run.
 */
import type { Result } from "./drive";

interface Target {
  scenario: string;
  /** The bound, as printed. */
  what: string;
  ok: (r: Result, baseCpuUs: number) => boolean;
}

const TARGETS: Target[] = [
  {
    scenario: "POST /store/orders",
    what: "≥ 2,500 req/s, p99 < 50 ms, ≤ 400 µs CPU",
    ok: (r) => r.requestsPerSecond >= 2500 && r.p99Ms < 50 && (r.cpuUsPerRequest ?? Infinity) <= 400,
  },
  { scenario: "PUT /store/inventory/{petId}", what: "≥ 2,500 req/s, p99 < 50 ms", ok: (r) => r.requestsPerSecond >= 2500 && r.p99Ms < 50 },
  { scenario: "mixed 90% reads / 10% writes", what: "≥ 0.3 of the baseline", ok: (r) => (r.ratioToBaseline ?? 0) >= 0.3 },
  {
    scenario: "GET /pets/{petId}",
    what: "≥ 0.6 of the baseline, ≤ 2× its CPU",
    ok: (r, baseCpuUs) => (r.ratioToBaseline ?? 0) >= 0.6 && (r.cpuUsPerRequest ?? Infinity) <= 2 * baseCpuUs,
  },
];

/** Peak RSS of the server, MB: the bound of the last target, and the one that fails the run. */
export const RSS_TARGET_MB = 150;

/** The line that fails the run when the server's peak RSS is at or over RSS_TARGET_MB, else undefined. */
export function rssCheckFailure(rssMb: number): string | undefined {
  return rssMb < RSS_TARGET_MB ? undefined : `FAILED: peak RSS of the server ${rssMb} MB ≥ ${RSS_TARGET_MB} MB (docs/performance.md#findings)`;
}

/** The targets table: each target beside its row of `results` (with ratios), "**MISSED**" when missed, "not run" without a row. */
export function formatTargets(results: readonly Result[], rssMb: number, baseCpuUs: number): string {
  const rows = TARGETS.map((t) => {
    const r = results.find((x) => x.scenario === t.scenario);
    if (!r) return `| ${t.scenario} | ${t.what} | not run | – |`;
    const got = `${r.requestsPerSecond} req/s, p99 ${r.p99Ms} ms, ${r.ratioToBaseline?.toFixed(2)} of baseline, ${r.cpuUsPerRequest ?? "?"} µs CPU`;
    return `| ${t.scenario} | ${t.what} | ${got} | ${t.ok(r, baseCpuUs) ? "met" : "**MISSED**"} |`;
  });
  rows.push(`| peak RSS of the server | < ${RSS_TARGET_MB} MB | ${rssMb} MB | ${rssMb < RSS_TARGET_MB ? "met" : "**MISSED**"} |`);
  return ["| target | bound | this run | |", "|---|---|---|---|", ...rows].join("\n");
}
