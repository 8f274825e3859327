/**
 * The request log (issue 17): one JSON line per request with request id,
 * method, route pattern, status, duration, database round trips, cache
 * outcome and account id — never keys, secrets or bodies; LOG_LEVEL filters;
 * unexpected errors carry the request id. In process (injected sink) and from
 * the real Node server's stdout.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { LogLevel } from "../../src/logger";
import type { RequestLine } from "../../src/telemetry/request-metrics";
import { connect } from "../support/client";
import { nodeTarget, type NodeTarget } from "../support/node-target";
import { startServer } from "../support/server-process";
import { signUp } from "../scenarios/accounts.scenarios";

/** A request line as written: the logger's fields around the middleware's. */
type Line = RequestLine & { time: string; level: LogLevel; msg: string; [field: string]: unknown };

const targets: NodeTarget[] = [];
afterEach(async () => {
  while (targets.length) await targets.pop()!.close();
});

async function logged(env: Record<string, string>) {
  const lines: { line: string; level: LogLevel }[] = [];
  const target = await nodeTarget(env, { log: (line, level) => lines.push({ line, level }) });
  targets.push(target);
  const parsed = () => lines.map(({ line }) => JSON.parse(line) as Line);
  return { target, lines, parsed };
}

describe("request log", () => {
  it("writes one JSON line per request with the route pattern, status, round trips, cache outcome and account — no secrets or bodies", async () => {
    const { target, lines, parsed } = await logged({ LOG_LEVEL: "info" });
    const api = await connect(target);
    const secretName = "Body text that must not be logged";
    const { account, apiKey } = await signUp(api, { name: secretName });
    lines.length = 0;

    const health = await target.fetch("/health");
    const me = await target.fetch("/accounts/me", { headers: { Authorization: `Bearer ${apiKey.key}` } });
    const bad = await target.fetch("/pets/abc?token=hidden-query-value");
    const missing = await target.fetch("/nowhere");
    const created = await target.fetch("/categories", {
      method: "POST",
      headers: { Authorization: `Bearer ${target.staffKey}`, "Content-Type": "application/json" },
      body: JSON.stringify({ name: secretName }),
    });
    expect([health.status, me.status, bad.status, missing.status, created.status]).toEqual([200, 200, 400, 404, 201]);

    const entries = parsed();
    expect(entries).toHaveLength(5);
    const [h, m, b, n, c] = entries;
    expect(h).toMatchObject({ level: "info", msg: "request", method: "GET", route: "/health", status: 200, dbRoundTrips: 1, accountId: null });
    expect(h!.requestId).toBe(health.headers.get("x-request-id"));
    expect(new Date(h!.time).toISOString()).toBe(h!.time);
    expect(typeof h!.durationMs).toBe("number");
    expect(h!.durationMs).toBeGreaterThanOrEqual(0);
    expect(m).toMatchObject({ route: "/accounts/me", status: 200, accountId: account.id });
    expect(m!.dbRoundTrips).toBeGreaterThanOrEqual(1);
    expect(b).toMatchObject({ route: "/pets/:petId", status: 400, dbRoundTrips: 0 });
    expect(n).toMatchObject({ route: null, status: 404 });
    expect(c).toMatchObject({ method: "POST", route: "/categories", status: 201 });
    for (const e of entries)
      expect(Object.keys(e).sort()).toEqual([
        "accountId",
        "cache",
        "dbRoundTrips",
        "durationMs",
        "level",
        "method",
        "msg",
        "requestId",
        "route",
        "status",
        "time",
      ]);
    const all = lines.map((l) => l.line).join("\n");
    for (const secret of [apiKey.key, apiKey.key.slice(4), target.staffKey, secretName, "hidden-query-value"]) expect(all).not.toContain(secret);
  });

  it("LOG_LEVEL=warn drops request lines; an unexpected error is logged as error with its request id", async () => {
    const { target, lines, parsed } = await logged({ LOG_LEVEL: "warn" });
    expect((await target.fetch("/health")).status).toBe(200);
    expect(lines).toHaveLength(0);
    await target.db.execute("DROP TABLE inventory"); // a real database fault
    const res = await target.fetch("/store/inventory");
    expect(res.status).toBe(500);
    const requestId = res.headers.get("x-request-id");
    const entries = parsed();
    expect(entries.map((e) => [e.level, e.msg, e.requestId])).toEqual([
      ["error", "unexpected error", requestId],
      ["error", "request", requestId],
    ]);
    expect(lines.every((l) => l.level === "error")).toBe(true);
    expect(entries[1]).toMatchObject({ route: "/store/inventory", status: 500 });
  });

  it("the Node server writes the lines to stdout", { timeout: 60_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "petstore-log-"));
    const server = await startServer({ databaseUrl: `file:${join(dir, "log.db")}`, env: { LOG_LEVEL: "info" } });
    try {
      const res = await fetch(`${server.url}/pets?limit=1`);
      expect(res.status).toBe(200);
      const requestId = res.headers.get("x-request-id");
      await res.arrayBuffer();
      // The server writes its log asynchronously (pino): the line may follow the response by a moment.
      const find = () =>
        server
          .output()
          .split("\n")
          .filter((l) => l.startsWith("{"))
          .map((l) => JSON.parse(l) as Line)
          .find((l) => l.requestId === requestId);
      await expect.poll(find, { timeout: 5_000 }).toBeDefined();
      const line = find();
      expect(line).toMatchObject({ level: "info", msg: "request", method: "GET", route: "/pets", status: 200, cache: "MISS", accountId: null });
      // The bootstrap key is printed once by design (above the log); no log line carries it.
      const jsonLines = server
        .output()
        .split("\n")
        .filter((l) => l.startsWith("{"));
      expect(jsonLines.join("\n")).not.toContain(server.bootstrapKey!.slice(4));
    } finally {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
