/**
 * Cloudflare Workers entry point: wires the Worker `env` to the app. The
 * database is a libSQL server (Turso in production, sqld locally) reached with
 * `@libsql/client/web` over HTTP (API.md §8); migrations are applied by
 * scripts, not here. Static docs assets come from the ASSETS binding.
 *
 * Runtime pieces: public reads go through the Workers Cache API
 * (src/runtime/edge-cache.ts: cached per location, purged by writes, bounded
 * by s-maxage elsewhere); the client address is `CF-Connecting-IP`; rate
 * limits use the Workers Rate Limiting bindings (src/runtime/workers-rate-limiter.ts);
 * webhook deliveries run in `ctx.waitUntil` after each successful write and
 * every minute from the Cron Trigger (`scheduled`, src/services/webhook-dispatcher.ts).
 */
import { createClient } from "@libsql/client/web";
import type { OpenAPIHono } from "@hono/zod-openapi";
import { createApp } from "./app";
import { parseConfig } from "./config";
import { createDatabase } from "./db/client";
import type { AppEnv } from "./lib/context";
import { edgeCache } from "./runtime/edge-cache";
import { WorkersRateLimiter } from "./runtime/workers-rate-limiter";
import { afterWrites, dispatchDue } from "./services/webhook-dispatcher";

/**
 * Bindings, variables and secrets of the Worker: `Env`, generated from
 * wrangler.toml by `wrangler types` (worker-configuration.d.ts). ASSETS may be
 * absent when the Worker runs without `[assets]` (tests).
 */
type WorkerEnv = Omit<Env, "ASSETS" | "DATABASE_AUTH_TOKEN"> & { ASSETS?: Env["ASSETS"]; DATABASE_AUTH_TOKEN?: string };

let cached: { key: string; app: OpenAPIHono<AppEnv>; dispatch: () => Promise<void> } | undefined;

/** One app per isolate and configuration: built on first request, then reused. */
function appFor(env: WorkerEnv): OpenAPIHono<AppEnv> {
  const key = `${env.DATABASE_URL}|${env.DATABASE_AUTH_TOKEN ?? ""}`;
  if (cached?.key === key) return cached.app;
  const client = createClient({ url: env.DATABASE_URL, authToken: env.DATABASE_AUTH_TOKEN });
  const db = createDatabase(client);
  const config = parseConfig(env);
  // Webhook deliveries (API.md §6), run after writes and by the Cron Trigger. Each invocation runs
  // its own pass: workerd forbids sharing promises or abort signals across requests, and
  // concurrent passes are safe because every attempt is claimed with a conditional UPDATE.
  const dispatch = () =>
    dispatchDue(db, config, () => new Date(), (input, init) => fetch(input, init)).then(
      () => undefined,
      (error: unknown) => console.error(`webhook dispatch failed: ${error instanceof Error ? error.message : String(error)}`),
    );
  const app = createApp({
    db,
    config,
    assets: async (path) => (env.ASSETS ? env.ASSETS.fetch(new URL(path, "https://assets.invalid").toString()) : null),
    clientIp: (c) => c.req.header("CF-Connecting-IP"),
    // Workers Rate Limiting bindings ([[ratelimits]] in wrangler.toml) + a per-isolate count for the headers.
    rateLimiter: WorkersRateLimiter.fromEnv(env, (error) => console.error(`rate limit binding failed: ${String(error)}`)),
    middleware: [edgeCache(), afterWrites((c) => c.executionCtx.waitUntil(dispatch()))],
  });
  cached = { key, app, dispatch };
  return app;
}

export default {
  fetch(request, env, ctx): Response | Promise<Response> {
    return appFor(env).fetch(request, env, ctx);
  },
  /** Cron Trigger (wrangler.toml `[triggers]`): retries due webhook deliveries, fans out missed events. */
  scheduled(_controller, env, ctx): void {
    appFor(env);
    ctx.waitUntil(cached!.dispatch());
  },
} satisfies ExportedHandler<WorkerEnv>;
