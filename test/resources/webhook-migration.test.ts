/**
 * Migration 0003 (docs/webhooks.md#design, "Migration from the delivery rows"): over a database with the
 * delivery rows of migration 0002, each subscription's pending deliveries keep their place in order (the
 * queue entry at its first pending one, with its attempts), finished ones become log entries, and the
 * next dispatch run delivers the pending ones in order.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Client, createClient } from "@libsql/client";
import { readMigrationFiles } from "drizzle-orm/migrator";
import { afterAll, beforeAll, expect, it } from "vitest";
import { parseConfig } from "../../src/config";
import { applyMigrations, MIGRATIONS_FOLDER } from "../../src/db/migrate";
import { dispatchDue } from "../../src/services/webhooks/dispatch";
import { TEST_ENV } from "../support/node-target";
import { Receiver, verified } from "../support/webhook-receiver";

let dir: string;
let client: Client;
let receiver: Receiver;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "petstore-migrate-"));
  client = createClient({ url: `file:${join(dir, "old.db")}` });
  receiver = await Receiver.start();
});
afterAll(async () => {
  client?.close();
  await receiver?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The delivery log as [event id, status, attempts], in event order. */
async function entries(): Promise<unknown[][]> {
  const rows = (await client.execute("SELECT event_id, status, attempts FROM webhook_deliveries ORDER BY event_id")).rows;
  return rows.map((r) => [r.event_id, r.status, r.attempts]);
}

it("keeps each subscription's pending deliveries in their place and order", async () => {
  const migrations = readMigrationFiles({ migrationsFolder: MIGRATIONS_FOLDER });
  const index = migrations.findIndex((m) => m.sql.some((s) => s.includes("webhook_dispatch")));
  await client.execute("CREATE TABLE __drizzle_migrations (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)");
  for (const m of migrations.slice(0, index)) {
    await client.batch(
      [...m.sql.filter((s) => s.trim()), { sql: "INSERT INTO __drizzle_migrations (hash, created_at) VALUES (?, ?)", args: [m.hash, m.folderMillis] }],
      "write",
    );
  }
  const now = new Date();
  const earlier = new Date(now.getTime() - 60_000).toISOString();
  const secret = `whsec_${Buffer.alloc(32, 9).toString("base64")}`;
  await client.batch(
    [
      ...[1, 2, 3, 4].map((i) => ({
        sql: "INSERT INTO events (id, type, occurred_at, data) VALUES (?, 'category.created', ?, ?)",
        args: [i, earlier, JSON.stringify({ id: i, name: `C${i}` })],
      })),
      {
        sql: "INSERT INTO webhooks (id, url, events, secret, status, created_at, last_event_id) VALUES (1, ?, '[\"*\"]', ?, 'active', ?, 0)",
        args: [receiver.url("/migrated"), secret, earlier],
      },
      "INSERT INTO webhook_event_types (type, webhook_id) VALUES ('*', 1)",
      "UPDATE webhook_fanout SET last_event_id = 4",
      {
        sql: "INSERT INTO webhook_deliveries (webhook_id, event_id, status, attempts, next_attempt_at, last_attempt_at, delivered_at) VALUES (1, 1, 'delivered', 1, ?, ?, ?)",
        args: [earlier, earlier, earlier],
      },
      {
        sql: "INSERT INTO webhook_deliveries (webhook_id, event_id, status, attempts, next_attempt_at, last_status_code, last_error, last_attempt_at) VALUES (1, 2, 'pending', 2, ?, 503, 'http_status', ?)",
        args: [earlier, earlier],
      },
      { sql: "INSERT INTO webhook_deliveries (webhook_id, event_id, status, attempts, next_attempt_at) VALUES (1, 3, 'pending', 0, ?)", args: [earlier] },
      { sql: "INSERT INTO webhook_deliveries (webhook_id, event_id, status, attempts, next_attempt_at) VALUES (1, 4, 'pending', 0, ?)", args: [earlier] },
    ],
    "write",
  );

  expect(await applyMigrations(client)).toBeGreaterThan(0);
  const [state] = (await client.execute("SELECT event_id FROM webhook_dispatch")).rows;
  expect(Number(state!.event_id)).toBe(4);
  // The queue entry of 0003 became the subscription's own state in 0006: its place, its head's attempts and retry time, due.
  const [own] = (await client.execute("SELECT place, attempts, retry_at, due_at IS NOT NULL AS due FROM webhooks WHERE id = 1")).rows;
  expect({ ...own }).toEqual({ place: 1, attempts: 2, retry_at: earlier, due: 1 });
  const log = await entries();
  expect(log).toEqual([
    [1, "delivered", 1],
    [2, "pending", 2],
  ]);

  const config = parseConfig({ ...TEST_ENV, WEBHOOK_MAX_ATTEMPTS: "8" });
  expect(await dispatchDue(client, { config, now: () => now, fetch: (input, init) => fetch(input, init) })).toMatchObject({ delivered: 3 });
  expect(receiver.at("/migrated").map((r) => verified(r, secret).id)).toEqual([2, 3, 4]);
  const after = await entries();
  expect(after).toEqual([
    [1, "delivered", 1],
    [2, "delivered", 3],
    [3, "delivered", 1],
    [4, "delivered", 1],
  ]);
});
