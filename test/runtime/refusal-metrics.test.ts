/**
 * Requests refused before the app are counted by reason from the edge itself (docs/operations.md#refused-requests): against the real
 * server with METRICS_PORT set, 10 refusals of 3 kinds over raw sockets raise `petstore_http_refusals_total` by exactly 10, each reason
 * by its own count, and write one `requests refused` line (the rest of the minute's are counted into the next).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { freePort } from "../support/prometheus";
import { rawExchange } from "../support/raw-http";
import { type ServerProcess, startServer } from "../support/server-process";

let dir: string;
let server: ServerProcess;
let metricsPort: number;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "petstore-refusal-metrics-"));
  metricsPort = await freePort();
  server = await startServer({ databaseUrl: `file:${join(dir, "petstore.db")}`, env: { METRICS_PORT: String(metricsPort) } });
});

afterAll(async () => {
  if (server && !server.exited()) expect(await server.stop()).toBe(0);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** `petstore_http_refusals_total` by reason, from one scrape. */
async function refusals(): Promise<Record<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const counts: Record<string, number> = {};
  for (const [, reason, value] of text.matchAll(/^petstore_http_refusals_total\{[^}]*petstore_refusal_reason="(\w+)"[^}]*\} (\S+)$/gm))
    counts[reason!] = Number(value);
  return counts;
}

it("10 refused requests of 3 kinds raise the counter by exactly 10, by reason, with one log line", async () => {
  const before = await refusals();
  expect(Object.keys(before).sort()).toEqual(
    ["bad_host", "bad_request_line", "bad_target", "expectation", "header_too_large", "method", "shutting_down", "timeout", "unfinished"].sort(),
  );
  const host = new URL(server.url).host;
  const kinds = [
    { reason: "bad_request_line", times: 4, status: 400, bytes: "GET /pets HTTP/1.1 trailing garbage\r\n\r\n" },
    { reason: "header_too_large", times: 3, status: 431, bytes: `GET /pets HTTP/1.1\r\nHost: ${host}\r\nX-Long: ${"a".repeat(20_000)}\r\n\r\n` },
    { reason: "method", times: 3, status: 501, bytes: `FOO /pets HTTP/1.1\r\nHost: ${host}\r\n\r\n` },
  ];
  const from = server.output().length;
  for (const { times, status, bytes } of kinds) for (let i = 0; i < times; i++) expect((await rawExchange(server.url, bytes)).status).toBe(status);

  const after = await refusals();
  const increase = (reason: string) => after[reason]! - before[reason]!;
  expect(Object.keys(after).reduce((sum, reason) => sum + increase(reason), 0)).toBe(10);
  for (const { reason, times } of kinds) expect(increase(reason), reason).toBe(times);

  const line = JSON.parse((await server.line(/"msg":"requests refused"/, from)).replace(/^[^{]*/, ""));
  expect(line).toMatchObject({ level: "info", reason: "bad_request_line", status: 400, refused: { bad_request_line: 1 }, nextLineAfterSeconds: 60 });
  expect(
    server
      .output()
      .slice(from)
      .match(/"msg":"requests refused"/g),
  ).toHaveLength(1);
}, 60_000);
