/** Node entry point: reads the environment, opens the database, serves the app alone or in a cluster, stops gracefully (docs/operations.md#starting). */
import cluster from "node:cluster";
import { once } from "node:events";
import type { Server } from "node:http";
import { getRequestListener } from "@hono/node-server";
import { getConnInfo } from "@hono/node-server/conninfo";
import { createApp, responseHeaders } from "./app";
import { type NodeSettings, nodeSettings } from "./config";
import { openDatabase } from "./db/driver/open";
import { MemoryRateLimiter } from "./http/rate-limiter";
import { clientAddress, incomingClientAddress } from "./runtime/node/client-address";
import { cacheHits } from "./runtime/node/cache-hits";
import { memoryReadCache } from "./runtime/node/memory-read-cache";
import { announceListening, clusterPurges, reportStartFailure, runPrimary } from "./runtime/node/cluster";
import { nodeAssets } from "./runtime/node/assets";
import { nodeEdge } from "./runtime/node/edge";
import { errorWriter } from "./runtime/node/refusals";
import { refusalObserver } from "./runtime/node/refusal-log";
import { pinoLogger } from "./runtime/node/pino-logger";
import { startTelemetry } from "./runtime/node/otel-sdk";
import { type StopStep, stopInOrder } from "./runtime/node/stop";
import { guardedWebhookFetch } from "./runtime/node/webhook-fetch";
import { processHolders } from "./runtime/node/holders";
import { bootstrapStaffKey } from "./services/accounts.service";
import { scheduleRetention } from "./services/retention";
import { createWebhookDispatcher } from "./services/webhooks/dispatch";
import { readBacklogs } from "./services/webhooks/backlog";
import { WebhookSignals } from "./telemetry/webhooks";
import { SubscribedTypes } from "./services/webhooks/interest";
import { nudgeDispatcher } from "./middleware/after-writes";

/** Bind `server` to hostname:port; resolves with the bound port. @throws Error when the address is taken or not allowed. */
async function listen(server: Server, hostname: string, port: number): Promise<number> {
  try {
    await once(server.listen(port, hostname), "listening");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EADDRINUSE") throw new Error(`Port ${port} on ${hostname} is already in use: stop the other server or set PORT.`);
    if (code === "EACCES" || code === "EADDRNOTAVAIL") throw new Error(`Cannot listen on ${hostname}:${port} (${code}): set HOST/PORT.`);
    throw error;
  }
  const address = server.address();
  return typeof address === "object" && address ? address.port : port;
}

/** How long a stop may take, ms: then it exits 1, naming the step still running. */
const STOP_MS = 10_000;

async function main(settings: NodeSettings): Promise<void> {
  const { app: config, trustedProxies } = settings;
  const { hostname, port, requestTimeoutMs, maxUnfinishedPerAddress } = settings.listen;
  // Before the first await: a signal during the start stops this process once it is started, not by the default kill.
  const stop = stopOnSignal();
  // Before anything records: off, nothing is started (docs/operations.md#traces, #metrics).
  const logger = pinoLogger(config.logLevel);
  const telemetry = await startTelemetry(settings.telemetry, logger);
  const database = await openDatabase(settings.database);
  const db = telemetry ? telemetry.database(database.db) : database.db;
  // Webhook deliveries run in this process (docs/webhooks.md#when-deliveries-run); the scrape reads each subscription's backlog.
  const signals = new WebhookSignals();
  telemetry?.subscriptions(async (counted) => signals.signals(await readBacklogs(db, Date.now(), undefined, counted ? "counted" : "ids")));
  const interest = new SubscribedTypes();
  const fetchFn = guardedWebhookFetch({ allowPrivate: config.webhooks.allowPrivateTargets });
  const dispatcher = createWebhookDispatcher(db, { config, interest, signals, fetch: fetchFn, holders: processHolders() });
  /** A dispatch run within 50 ms (a burst of writes or redeliveries becomes one run). */
  const dispatchSoon = () => dispatcher.nudgeSoon(50);
  const rateLimiter = new MemoryRateLimiter();
  const readCache = memoryReadCache({ ttlMs: config.readCacheTtlSeconds * 1000, peers: clusterPurges(), responseHeaders: await responseHeaders() });
  const app = createApp({
    db,
    config,
    logger,
    rateLimiter,
    assets: nodeAssets(),
    checkDatabase: database.check,
    clientIp: clientAddress(trustedProxies, (c) => getConnInfo(c).remote.address),
    middleware: [readCache.middleware],
    afterWrite: [readCache.purge, nudgeDispatcher(interest, dispatchSoon)],
    dispatchSoon,
    subscriptionsChanged: () => interest.invalidate(),
    telemetry: telemetry?.requests,
  });
  // The way in, guard by guard (src/runtime/node/edge.ts); read-cache hits spend the app's limiter and log through the app's request line.
  const edge = nodeEdge({
    app: getRequestListener(app.fetch),
    cacheHit: cacheHits({ cache: readCache, rateLimiter, config, logger, clientIp: incomingClientAddress(trustedProxies), telemetry: telemetry?.requests }),
    errors: errorWriter(await responseHeaders({}), refusalObserver(logger)),
    requestTimeoutMs,
    maxUnfinishedPerAddress,
  });
  const closing: StopStep[] = [
    { name: "closing the database", stop: () => database.close() },
    { name: "flushing traces and closing the metrics listener", stop: () => telemetry?.shutdown() },
  ];
  if (stop.signalled()) {
    // Stopped while starting: no listener, so no connection is accepted only to be closed (in a cluster, handed here as this stops).
    stop.started(closing);
    return;
  }
  let boundPort: number;
  try {
    boundPort = await listen(edge.server, hostname, port);
  } catch (error) {
    for (const step of closing) await step.stop();
    throw error;
  }
  // Only once the port is ours: a start that fails never consumes the one-time key.
  const staffKey = await bootstrapStaffKey(db, new Date());
  if (staffKey) {
    console.log(`Created the bootstrap staff account. Its API key (shown only now):\n  ${staffKey.key}`);
  }
  dispatcher.start(config.webhooks.pollIntervalMs);
  const retention = scheduleRetention({
    db,
    config,
    onError: (error) => console.error(`retention: ${error instanceof Error ? error.message : String(error)}`),
  });
  console.log(`Petstore API listening on http://${hostname}:${boundPort} (docs: /docs, database: ${database.displayUrl})`);
  announceListening();

  stop.started([
    { name: "stopping the listener", stop: () => edge.stop() },
    // Let a delivery run in progress record its results before the database closes.
    { name: "stopping webhook dispatch", stop: () => dispatcher.stop() },
    { name: "stopping retention", stop: () => retention.stop() },
    ...closing,
  ]);
}

/**
 * Armed as the start begins (docs/operations.md#stopping): on the first SIGTERM or SIGINT, run the steps given to `started` (stopInOrder),
 * at once or as soon as the start gives them; exit 0 when the stop was clean, else 1, and 1 naming its step after STOP_MS.
 */
function stopOnSignal(): { signalled(): boolean; started(steps: readonly StopStep[]): void } {
  let signalled = false;
  let steps: readonly StopStep[] | undefined;
  let running = "the start";
  const run = (given: readonly StopStep[]) => void stopInOrder(given, console.error, (name) => (running = name)).then((clean) => process.exit(clean ? 0 : 1));
  const shutdown = (signal: string) => {
    if (signalled) return;
    signalled = true;
    console.log(`${signal}: closing`);
    setTimeout(() => {
      console.error(`stop: ${running} did not finish within ${STOP_MS / 1000} s`);
      process.exit(1);
    }, STOP_MS).unref();
    if (steps) run(steps);
  };
  for (const signal of ["SIGTERM", "SIGINT"]) process.on(signal, () => shutdown(signal));
  return {
    signalled: () => signalled,
    started: (given) => {
      steps = given;
      if (signalled) run(given);
    },
  };
}

/** For the cluster's primary once its workers have exited: open and close a file database, the last user's close removing `-wal`/`-shm`. */
async function closeDatabaseLast(settings: NodeSettings["database"]): Promise<void> {
  if (!settings.url.startsWith("file:") || settings.syncUrl) return;
  const database = await openDatabase(settings);
  await database.close();
}

/** One server process, or with WEB_CONCURRENCY > 1 the primary of that many (src/runtime/node/cluster.ts). */
async function start(): Promise<void> {
  const settings = nodeSettings(process.env);
  if (settings.processes > 1 && cluster.isPrimary) {
    runPrimary(settings.processes, { afterStop: () => closeDatabaseLast(settings.database), metrics: settings.telemetry.metrics });
    return;
  }
  await main(settings);
}

start().catch((error) => {
  const message = error instanceof Error ? error.message : String(error);
  if (cluster.isWorker) reportStartFailure(message);
  else {
    console.error(message);
    process.exit(1);
  }
});
