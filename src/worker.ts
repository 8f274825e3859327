/**
 * Cloudflare Workers entry point: wires the Worker `env` to the app. The
 * database is a libSQL server (Turso in production, sqld locally) reached with
 * `@libsql/client/web` over HTTP (API.md §8); migrations are applied by
 * scripts, not here. Static docs assets come from the ASSETS binding.
 *
 * Runtime pieces: public reads are served by Workers Cache in front of the
 * Worker (`[cache]` in wrangler.toml; src/runtime/workers-cache.ts purges the
 * exact tags each write changed, in every location); the client address is `CF-Connecting-IP`; rate
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
import { forEdge, workersCache } from "./runtime/workers-cache";
import { WorkersRateLimiter } from "./runtime/workers-rate-limiter";
import { afterWrites, dispatchDue } from "./services/webhook-dispatcher";

/**
 * Bindings, variables and secrets of the Worker: `Env`, generated from
 * wrangler.toml by `wrangler types` (worker-configuration.d.ts). ASSETS may be
 * absent when the Worker runs without `[assets]` (tests).
 */
type WorkerEnv = Omit<Env, "ASSETS" | "DATABASE_AUTH_TOKEN"> & {
  ASSETS?: Env["ASSETS"];
  DATABASE_AUTH_TOKEN?: string;
  /** Tests only: where purges are POSTed when the runtime has no `ctx.cache` (local workerd). */
  CACHE_PURGE_CAPTURE_URL?: string;
};

/** POST one purge (`{requestId, tags}`) as JSON to a recorder. */
async function postPurge(url: string, purge: { requestId: string; tags: string[] }): Promise<void> {
  const res = await fetch(url, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(purge) });
  await res.body?.cancel();
  if (!res.ok) throw new Error(`purge recorder answered ${res.status}`);
}

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
    middleware: [
      workersCache({
        log: (line) => console.error(line),
        // Local workerd has no ctx.cache; the Worker suite records purges at this URL instead.
        fallback: env.CACHE_PURGE_CAPTURE_URL ? (purge) => postPurge(env.CACHE_PURGE_CAPTURE_URL!, purge) : undefined,
      }),
      afterWrites((c) => c.executionCtx.waitUntil(dispatch())),
    ],
  });
  cached = { key, app, dispatch };
  return app;
}

export default {
  async fetch(request, env, ctx): Promise<Response> {
    return forEdge(await appFor(env).fetch(request, env, ctx));
  },
  /** Cron Trigger (wrangler.toml `[triggers]`): retries due webhook deliveries, fans out missed events. */
  scheduled(_controller, env, ctx): void {
    appFor(env);
    ctx.waitUntil(cached!.dispatch());
  },
} satisfies ExportedHandler<WorkerEnv>;
