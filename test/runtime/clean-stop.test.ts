/**
 * A stop that says what went wrong (src/server.ts, src/runtime/node/stop.ts; docs/operations.md#stopping): every step of the stop is
 * attempted whatever an earlier one did, each failure is logged naming its own step, and the exit code is 0 only for a clean stop.
 * The real server, with its trace collector unreachable, exits 1 blaming the traces, and still closes its database (no -wal/-shm left).
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { stopInOrder } from "../../src/runtime/node/stop";
import { freePort } from "../support/prometheus";
import { call, startServer } from "../support/server-process";

const dir = mkdtempSync(join(tmpdir(), "petstore-clean-stop-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it("every step runs after a failing one; each failure names its step; the result says whether the stop was clean", async () => {
  const ran: string[] = [];
  const lines: string[] = [];
  const step = (name: string, fail?: string) => ({
    name,
    stop: async () => {
      ran.push(name);
      if (fail) throw new Error(fail);
    },
  });
  const steps = [step("stopping webhook dispatch", "a round failed"), step("closing the database"), step("flushing traces", "ECONNREFUSED")];
  expect(await stopInOrder(steps, (line) => lines.push(line))).toBe(false);
  expect(ran).toEqual(["stopping webhook dispatch", "closing the database", "flushing traces"]);
  expect(lines).toEqual(["stop: stopping webhook dispatch failed: a round failed", "stop: flushing traces failed: ECONNREFUSED"]);
  expect(await stopInOrder([step("closing the database")], (line) => lines.push(line))).toBe(true);
  expect(lines).toHaveLength(2);
});

it("with the trace collector unreachable: exit 1, the traces blamed, not the database, which is closed", async () => {
  const file = join(dir, "petstore.db");
  const collector = `http://127.0.0.1:${await freePort()}`;
  const server = await startServer({
    databaseUrl: `file:${file}`,
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector, OTEL_BSP_SCHEDULE_DELAY: "600000", OTEL_EXPORTER_OTLP_TIMEOUT: "1000" },
  });
  // A span queued, sent only by the stop's flush.
  expect((await call(server.url, "GET", "/pets")).status).toBe(200);
  const from = server.output().length;
  expect(await server.stop()).toBe(1);
  const stopLines = server.output().slice(from);
  expect(stopLines).toMatch(/^stop: flushing traces and closing the metrics listener failed: .+$/m);
  expect(stopLines).not.toMatch(/database/);
  expect([existsSync(`${file}-wal`), existsSync(`${file}-shm`)]).toEqual([false, false]);
}, 60_000);

it("a cluster whose server processes stop uncleanly exits 1 too, after closing the database", async () => {
  const file = join(dir, "cluster.db");
  const collector = `http://127.0.0.1:${await freePort()}`;
  const env = { WEB_CONCURRENCY: "2", OTEL_EXPORTER_OTLP_ENDPOINT: collector, OTEL_BSP_SCHEDULE_DELAY: "600000", OTEL_EXPORTER_OTLP_TIMEOUT: "1000" };
  const server = await startServer({ databaseUrl: `file:${file}`, env });
  expect((await call(server.url, "GET", "/pets")).status).toBe(200);
  expect(await server.stop()).toBe(1);
  expect(server.output()).toMatch(/^stop: flushing traces and closing the metrics listener failed: /m);
  expect([existsSync(`${file}-wal`), existsSync(`${file}-shm`)]).toEqual([false, false]);
}, 120_000);
