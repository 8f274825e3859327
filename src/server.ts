/**
 * Node entry point: reads the environment, opens the embedded libSQL file
 * (migrated on start), serves the app on HOST:PORT with @hono/node-server and
 * shuts down gracefully on SIGTERM/SIGINT (API.md §8).
 *
 * Webhook deliveries run in this process (src/services/webhook-dispatcher.ts).
 *
 * Environment: DATABASE_URL (default `file:.data/petstore.db`), HOST
 * (127.0.0.1), PORT (8787) and the variables of `parseConfig`.
 */
import { serve } from "@hono/node-server";
import { createApp } from "./app";
import { parseConfig } from "./config";
import { openLocalDatabase } from "./db/local";
import { getConnInfo } from "@hono/node-server/conninfo";
import { memoryReadCache } from "./runtime/memory-read-cache";
import { nodeAssets } from "./runtime/node-assets";
import { guardedWebhookFetch } from "./runtime/node-webhook-fetch";
import { bootstrapStaffKey } from "./services/accounts.service";
import { afterWrites, createWebhookDispatcher } from "./services/webhook-dispatcher";

async function main(): Promise<void> {
  const config = parseConfig(process.env);
  const url = process.env.DATABASE_URL || "file:.data/petstore.db";
  const db = await openLocalDatabase(url);
  const staffKey = await bootstrapStaffKey(db, new Date());
  if (staffKey) {
    // Printed once, on the first start of a fresh database; only its hash is stored.
    console.log(`Created the bootstrap staff account. Its API key (shown only now):\n  ${staffKey.key}`);
  }
  // Webhook deliveries (API.md §6): polled every WEBHOOK_POLL_MS and run within 50 ms of a successful write (bursts coalesce).
  // Deliveries connect only to addresses checked at connect time (SSRF by host name, src/runtime/node-webhook-fetch.ts).
  const webhookFetch = guardedWebhookFetch(config.webhooks.allowPrivateTargets);
  const dispatcher = createWebhookDispatcher(db, config, undefined, webhookFetch).start(config.webhooks.pollIntervalMs);
  const app = createApp({
    db,
    config,
    assets: nodeAssets(),
    clientIp: (c) => getConnInfo(c).remote.address,
    middleware: [memoryReadCache({ ttlMs: config.readCacheTtlSeconds * 1000 }), afterWrites(() => dispatcher.nudgeSoon(50))],
  });
  const hostname = process.env.HOST || "127.0.0.1";
  const port = Number(process.env.PORT || 8787);
  const server = serve({ fetch: app.fetch, hostname, port }, (info) => {
    console.log(`Petstore API listening on http://${hostname}:${info.port} (docs: /docs, database: ${url})`);
  });

  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    console.log(`${signal}: closing`);
    server.close(() => {
      // Let a delivery run in progress record its results before the database closes.
      void dispatcher.stop().finally(() => {
        db.$client.close();
        process.exit(0);
      });
    });
    setTimeout(() => process.exit(0), 10_000).unref();
  };
  process.on("SIGTERM", () => shutdown("SIGTERM"));
  process.on("SIGINT", () => shutdown("SIGINT"));
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
