/**
 * The pure parts of `npm run bench` (bench/): its flags as bench/README.md
 * and docs/performance.md use them, which rows a `--scenarios` list selects,
 * reading `npm start`'s node flags, merging samples into a row, and the
 * tables it prints. No server, no timing.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../../scripts/sqld";
import { resultOf, type Result } from "../../bench/drive";
import { parseOptions, selected } from "../../bench/options";
import { npmStartCommand, startCommandOf } from "../../bench/processes";
import { baselineOf, formatRun, withRatios } from "../../bench/report";
import { formatTargets, rssCheckFailure } from "../../bench/targets";

/** A row with the given fields, zero elsewhere. */
const row = (scenario: string, fields: Partial<Result> = {}): Result => ({
  scenario,
  requestsPerSecond: 0,
  p50Ms: 1,
  p99Ms: 2,
  non2xx: 0,
  errors: 0,
  ...fields,
});

describe("bench options", () => {
  it("defaults to the documented run", () => {
    expect(parseOptions([])).toEqual({
      duration: 10,
      connections: 50,
      warmup: 3,
      scenarios: [],
      pets: 1000,
      sqld: true,
      engine: true,
      cpuProf: undefined,
      rows: false,
      help: false,
    });
  });

  it("reads the flags as the docs write them", () => {
    const options = parseOptions([
      "--scenarios",
      "=GET /pets/{petId}, =POST /store/orders,mixed",
      "--sqld",
      "false",
      "--engine",
      "false",
      "--warmup",
      "0",
      "--duration",
      "2",
      "--cpu-prof",
      "profiles",
    ]);
    expect(options).toMatchObject({ scenarios: ["=GET /pets/{petId}", "=POST /store/orders", "mixed"], sqld: false, engine: false, warmup: 0, duration: 2 });
    expect(options.cpuProf).toBe("profiles");
    expect(parseOptions(["--rows"]).rows).toBe(true);
    expect(parseOptions(["--help"]).help).toBe(true);
  });

  it("refuses unknown flags and values that are not numbers or booleans", () => {
    expect(() => parseOptions(["--frobnicate"])).toThrow(/frobnicate/);
    expect(() => parseOptions(["--duration", "ten"])).toThrow(/--duration/);
    expect(() => parseOptions(["--duration", "0"])).toThrow(/--duration/);
    expect(() => parseOptions(["--connections", ""])).toThrow(/--connections/);
    expect(() => parseOptions(["--sqld", "no"])).toThrow(/--sqld/);
  });

  it("selects scenarios by substring, or exactly when written =name", () => {
    const names = ["GET /pets/{petId}", "GET /pets/{petId} (auth, not cached)", "worker: GET /pets/{petId}", "mixed 90% reads / 10% writes"];
    expect(names.filter((n) => selected(n, ["=GET /pets/{petId}"]))).toEqual(["GET /pets/{petId}"]);
    expect(names.filter((n) => selected(n, ["worker"]))).toEqual(["worker: GET /pets/{petId}"]);
    expect(names.filter((n) => selected(n, ["GET /pets/{petId}"]))).toEqual(names.slice(0, 3));
    expect(names.filter((n) => selected(n, ["mixed", "=nothing"]))).toEqual(["mixed 90% reads / 10% writes"]);
  });
});

describe("npm start as the bench runs it", () => {
  it("reads the environment assignments and node flags of a start script", () => {
    const script =
      "npm run build:server && MALLOC_ARENA_MAX=2 FOO=a=b exec node scripts/with-node.mjs node --max-semi-space-size=8 --trace-gc dist/node/server.mjs";
    expect(startCommandOf(script)).toEqual({ env: { MALLOC_ARENA_MAX: "2", FOO: "a=b" }, nodeFlags: ["--max-semi-space-size=8", "--trace-gc"] });
  });

  it("finds every node flag of the repository's own npm start", () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: { start: string } };
    expect(pkg.scripts.start).toContain("dist/node/server.mjs");
    expect(npmStartCommand().nodeFlags).toEqual(pkg.scripts.start.match(/(?<=\s)--\S+/g) ?? []);
  });
});

describe("bench rows and tables", () => {
  it("merges samples: totals over their time, p50 weighted by requests, the worst p99", () => {
    const merged = resultOf("x", [
      { requests: 100, seconds: 1, p50Ms: 2, p99Ms: 10, non2xx: 1, errors: 0, cpuUs: 1000 },
      { requests: 300, seconds: 1, p50Ms: 4, p99Ms: 8, non2xx: 0, errors: 2, cpuUs: 5000 },
    ]);
    expect(merged).toEqual({ scenario: "x", requestsPerSecond: 200, p50Ms: 4, p99Ms: 10, non2xx: 1, errors: 2, cpuUsPerRequest: 15 });
    expect(resultOf("y", [{ requests: 10, seconds: 1, p50Ms: 1, p99Ms: 1, non2xx: 0, errors: 0 }]).cpuUsPerRequest).toBeUndefined();
  });

  it("prints each row against the baseline's mean and each worker row against its floors", () => {
    const baseline = baselineOf(
      row("baseline: bare Hono, constant JSON (before)", { requestsPerSecond: 100, cpuUsPerRequest: 20 }),
      row("baseline: bare Hono, constant JSON (after)", { requestsPerSecond: 300, cpuUsPerRequest: 20 }),
    );
    const floor = "worker floor: one query per request + 1 rate-limit binding call, deployed like the Worker";
    const plainFloor = "worker floor: one query per request";
    const results = withRatios(
      [
        row("GET /pets/{petId}", { requestsPerSecond: 50, cpuUsPerRequest: 40 }),
        row("worker: GET /pets/{petId}", { requestsPerSecond: 10, cpuUsPerRequest: 6000, floor, plainFloor }),
        row(floor, { requestsPerSecond: 20, cpuUsPerRequest: 5000 }),
        row(plainFloor, { requestsPerSecond: 40, cpuUsPerRequest: 3000 }),
      ],
      baseline,
    );
    expect(results[0]!.ratioToBaseline).toBe(0.25);
    const text = formatRun({ connections: 50, duration: 10, pets: 1943, node: "v24.0.0", baseline, results, peakRssMb: 120 });
    const lines = text.split("\n");
    expect(lines).toContain("50 connections, 10 s per scenario, 1943 pets, node v24.0.0");
    expect(lines).toContain("| baseline: bare Hono, constant JSON (before) | 100 | 1 | 2 | 0.50 | 20 | 1.00 | 0 |");
    expect(lines).toContain("| GET /pets/{petId} | 50 | 1 | 2 | 0.25 | 40 | 2.00 | 0 |");
    expect(lines).toContain(`| worker: GET /pets/{petId} | 10 | 1 | 2 | ${floor} | 0.50 | 6000 | 1.20 | 0.25 | 0 |`);
    expect(lines).toContain(`| ${plainFloor} | 40 | 1 | 2 | – | – | 3000 | – | – | 0 |`);
    expect(lines.at(-1)).toBe("Peak RSS of the server (VmHWM) after all scenarios: 120 MB");
    expect(formatRun({ connections: 50, duration: 10, pets: 1, node: "v24.0.0", baseline, results: results.slice(0, 1), peakRssMb: 1 })).not.toContain(
      "Worker rows",
    );
  });

  it("flags each target met, missed or not run", () => {
    const results = [
      row("POST /store/orders", { requestsPerSecond: 3000, p99Ms: 30, cpuUsPerRequest: 350, ratioToBaseline: 0.1 }),
      row("GET /pets/{petId}", { requestsPerSecond: 20000, p99Ms: 5, cpuUsPerRequest: 70, ratioToBaseline: 0.7 }),
    ];
    const lines = formatTargets(results, 151, 30).split("\n");
    expect(lines[2]).toBe("| POST /store/orders | ≥ 2,500 req/s, p99 < 50 ms, ≤ 400 µs CPU | 3000 req/s, p99 30 ms, 0.10 of baseline, 350 µs CPU | met |");
    expect(lines[3]).toBe("| PUT /store/inventory/{petId} | ≥ 2,500 req/s, p99 < 50 ms | not run | – |");
    expect(lines[5]).toMatch(/^\| GET \/pets\/\{petId\} \|.*\| \*\*MISSED\*\* \|$/); // 70 µs > 2 × 30 µs
    expect(lines[6]).toBe("| peak RSS of the server | < 150 MB | 151 MB | **MISSED** |");
  });

  it("fails the run on a peak RSS at or over 150 MB", () => {
    expect(rssCheckFailure(149)).toBeUndefined();
    expect(rssCheckFailure(150)).toMatch(/^FAILED: peak RSS of the server 150 MB ≥ 150 MB/);
    expect(rssCheckFailure(226)).toMatch(/^FAILED: peak RSS of the server 226 MB/);
  });
});
