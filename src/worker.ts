/**
 * Cloudflare Workers entry point: `fetch` serves the app behind Workers Cache, `queue` runs the webhook dispatch at due times, `scheduled`
 * runs it every minute and retention hourly. The isolate keeps plain data only; what does I/O is built per request
 * (docs/architecture.md#workers-what-may-outlive-a-request).
 */
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { exports, tracing, WorkerEntrypoint } from "cloudflare:workers";
import { createApp } from "./app";
import { type WorkerSettings, workerSettings } from "./config";
import type { Database } from "./db/client";
import { openRemoteDatabase, waitingOutBusy, withRoundTrips } from "./db/driver/remote";
import { tracedDatabase } from "./db/traced";
import type { AppEnv } from "./http/context";
import { consoleSink, jsonLogger, loggableError, type Logger, withTraceFields } from "./logger";
import { MemoryRateLimiter } from "./http/rate-limiter";
import { type CoordinatorEnv, coordinatorOf, flushPurges, isPurgeFlush } from "./runtime/workers/purge-coordinator";
import { edgePolicy, edgePurge, forEdge, type PurgeFallback } from "./runtime/workers/cache";
import { WorkersRateLimiter } from "./runtime/workers/rate-limiter";
import { type IsolateDispatch, isolateDispatch } from "./runtime/workers/dispatch-runs";
import { RunTimer } from "./runtime/workers/run-queue";
import { sendAll, spreadOver } from "./runtime/workers/webhook-sender";
import { registerWorkersTracing } from "./runtime/workers/tracing";
import { requestSpan } from "./runtime/request-span";
import { pruneExpired } from "./services/retention";
import type { Link } from "./services/webhooks/chain";
import type { Claimed } from "./services/webhooks/claims";
import { SubscribedTypes } from "./services/webhooks/interest";
import { nudgeDispatcher } from "./middleware/after-writes";

/** The Worker's bindings, variables and secrets: `Env` of worker-configuration.d.ts (`wrangler types`); ASSETS is absent without `[assets]` (tests). */
type WorkerEnv = Omit<Env, "ASSETS" | "DATABASE_AUTH_TOKEN" | "PURGE_COORDINATOR"> & CoordinatorEnv & { ASSETS?: Env["ASSETS"]; DATABASE_AUTH_TOKEN?: string };

// The services' and the database's spans go to the runtime's custom spans ([observability.traces] in wrangler.toml).
registerWorkersTracing(tracing);

/** A new libSQL HTTP client for one request (or cron run), SQLITE_BUSY waited out for 5 s as on Node (src/db/driver/remote.ts), traced. */
function databaseFor({ url, authToken }: WorkerSettings["database"]): Database {
  return tracedDatabase(waitingOutBusy(openRemoteDatabase(url, { authToken }), 5_000));
}

const workerEnv = (c: Context<AppEnv>) => c.env as unknown as WorkerEnv;

/** The Cron Trigger of retention in wrangler.toml (hourly). */
const RETENTION_CRON = "0 * * * *";

/** Kept per isolate and configuration: plain data and `env`, which is isolate-wide (https://developers.cloudflare.com/workers/runtime-apis/bindings/#importing-env-as-a-global). */
type Isolate = { app: OpenAPIHono<AppEnv>; settings: WorkerSettings; logger: Logger; dispatch: IsolateDispatch };
let cached: (Isolate & { env: WorkerEnv; key: string }) | undefined;

/** The app of this isolate and configuration: built on the first request, then reused. @throws Error naming every bad variable. */
function appFor(env: WorkerEnv): Isolate {
  // The runtime passes the same env object to the requests of an isolate: compare its strings only when it differs.
  if (cached?.env === env) return cached;
  const key = JSON.stringify(Object.entries(env).filter(([_name, value]) => typeof value === "string"));
  if (cached?.key === key) {
    cached.env = env;
    return cached;
  }
  const settings = workerSettings(env);
  const config = settings.app;
  const interest = new SubscribedTypes();
  // Every line carries the trace id of the invocation (or of the span it was written in).
  const logger = withTraceFields(jsonLogger(config.logLevel, consoleSink));
  // A dispatch run in this request's waitUntil: after a write some subscription may want, or a queued redelivery; later ones from the queue.
  const timer = new RunTimer(env.WEBHOOK_RUNS, (error) => logger.log("error", "webhook run not queued", { error: loggableError(error).message }));
  const dispatch = isolateDispatch(config, interest, logger, withRoundTrips, timer, () => spreadOver(exports.WebhookSender));
  const dispatchInRequest = (c: Context<AppEnv>) => c.executionCtx.waitUntil(dispatch.inInvocation(c.get("db")));
  // Per-isolate request counts (plain numbers); each request gets a limiter over its own bindings.
  const shadow = new MemoryRateLimiter();
  const onBindingError = (error: unknown) => logger.log("error", "rate limit binding failed", { error: String(error) });
  const app = createApp({
    db: () => databaseFor(settings.database),
    config,
    logger,
    telemetry: { middleware: [requestSpan()] },
    assets: async (path, c) => {
      const assets = workerEnv(c).ASSETS;
      return assets ? assets.fetch(new URL(path, "https://assets.invalid").toString()) : null;
    },
    clientIp: (c) => c.req.header("CF-Connecting-IP"),
    // Workers Rate Limiting bindings ([[ratelimits]] in wrangler.toml) + the per-isolate count for the headers.
    rateLimiter: (c) => WorkersRateLimiter.fromEnv(workerEnv(c), onBindingError, shadow),
    middleware: [edgePolicy],
    afterWrite: [
      // Purges first (a stale edge answer costs every client), then a dispatch run in this request's waitUntil.
      edgePurge({
        coordinator: (c) => coordinatorOf(workerEnv(c)),
        log: (line) => logger.log("error", line),
        fallback: purgeFallback(settings.purge.captureUrl),
      }),
      nudgeDispatcher(interest, dispatchInRequest),
    ],
    dispatchSoon: dispatchInRequest,
    subscriptionsChanged: () => interest.invalidate(),
  });
  cached = { env, key, app, settings, logger, dispatch };
  return cached;
}

/** Local workerd has no ctx.cache; the Worker suite records purges by a POST of each batch (`{id, tags, parts}`) as JSON to this URL instead. */
function purgeFallback(captureUrl: string | undefined): PurgeFallback | undefined {
  if (!captureUrl) return undefined;
  return async (purge) => {
    const res = await fetch(captureUrl, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(purge) });
    await res.body?.cancel();
    if (!res.ok) throw new Error(`purge recorder answered ${res.status}`);
  };
}

export { PurgeCoordinator } from "./runtime/workers/purge-coordinator";

/** An unordered subscription's sends in an invocation of their own, with its own six connections (docs/webhooks.md#workers). */
export class WebhookSender extends WorkerEntrypoint<WorkerEnv> {
  /** Send all of `links` to `s`, `inFlight` (≤ 4) at once: what was sent, in order. Never throws. */
  send(s: Claimed, links: Link[], inFlight: number) {
    return sendAll(appFor(this.env).settings.app, s, links, inFlight);
  }
}

export default {
  async fetch(request, env, ctx): Promise<Response> {
    // The purge coordinator's alarm calls back here to purge in this entrypoint (src/runtime/workers/purge-coordinator.ts).
    if (isPurgeFlush(request)) {
      const { logger, settings } = appFor(env);
      return flushPurges(request, env, ctx, { fallback: purgeFallback(settings.purge.captureUrl), log: (line) => logger.log("error", line) });
    }
    return forEdge(await appFor(env).app.fetch(request, env, ctx));
  },
  /** Cron Triggers (wrangler.toml `[triggers]`): `RETENTION_CRON` prunes (docs/configuration.md#retention); the other runs the webhook dispatch. */
  scheduled(controller, env, ctx): void {
    const { settings, logger, dispatch } = appFor(env);
    if (controller.cron === RETENTION_CRON) {
      const run = pruneExpired(databaseFor(settings.database), settings.app.eventRetentionDays, new Date(controller.scheduledTime));
      const failed = (error: unknown) => logger.log("error", "retention failed", { error: loggableError(error).message });
      ctx.waitUntil(run.then((report) => logger.log("info", "retention", { ...report }), failed));
    } else ctx.waitUntil(dispatch.inInvocation(databaseFor(settings.database), true));
  },
  /** The queue consumer (wrangler.toml `[[queues.consumers]]`): a batch of `WEBHOOK_RUNS` messages is one dispatch run; the queue retries a failed one. */
  async queue(_batch, env, _ctx): Promise<void> {
    const { settings, dispatch } = appFor(env);
    await dispatch.queued(databaseFor(settings.database));
  },
} satisfies ExportedHandler<WorkerEnv>;
