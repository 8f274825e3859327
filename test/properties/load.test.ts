/**
 * The load scenarios (issue 11) against the Node server as a child process
 * (src/server.ts over a fresh libSQL file), reached over real sockets; the
 * rows are checked through a second connection to the same file.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient, type Client } from "@libsql/client";
import { afterAll, beforeAll, expect } from "vitest";
import { startServer, type ServerProcess } from "../support/server-process";
import { TEST_ENV } from "../support/node-target";
import { loadScenarios, type LoadTarget } from "../scenarios/load.scenarios";

let dir: string;
let server: ServerProcess;
let sql: Client;
let target: LoadTarget;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "petstore-load-"));
  const databaseUrl = `file:${join(dir, "petstore.db")}`;
  server = await startServer({ databaseUrl, env: TEST_ENV });
  expect(server.bootstrapKey, server.output()).toMatch(/^psk_/);
  sql = createClient({ url: databaseUrl });
  target = {
    name: "node-process",
    staffKey: server.bootstrapKey!,
    sql,
    fetch: (path, init) => fetch(`${server.url}${path}`, { redirect: "manual", ...init }),
    close: async () => {},
  };
});

afterAll(async () => {
  sql?.close();
  if (server && !server.exited()) expect(await server.stop()).toBe(0);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

loadScenarios(() => target);
