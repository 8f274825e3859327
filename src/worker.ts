/**
 * Cloudflare Workers entry point: wires the Worker `env` to the app. The
 * database is a libSQL server (Turso in production, sqld locally) reached with
 * `@libsql/client/web` over HTTP (API.md §8); migrations are applied by
 * scripts, not here. Static docs assets come from the ASSETS binding.
 */
import { createClient } from "@libsql/client/web";
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { ExecutionContext } from "hono";
import { createApp } from "./app";
import { parseConfig } from "./config";
import { createDatabase } from "./db/client";
import type { AppEnv } from "./lib/context";

/** Bindings and variables of the Worker (wrangler.toml and secrets). */
export interface WorkerEnv {
  DATABASE_URL: string;
  DATABASE_AUTH_TOKEN?: string;
  ASSETS?: { fetch(request: Request | string): Promise<Response> };
  [name: string]: unknown;
}

let cached: { key: string; app: OpenAPIHono<AppEnv> } | undefined;

/** One app per isolate and configuration: built on first request, then reused. */
function appFor(env: WorkerEnv): OpenAPIHono<AppEnv> {
  const key = `${env.DATABASE_URL}|${env.DATABASE_AUTH_TOKEN ?? ""}`;
  if (cached?.key === key) return cached.app;
  const client = createClient({ url: env.DATABASE_URL, authToken: env.DATABASE_AUTH_TOKEN });
  const app = createApp({
    db: createDatabase(client),
    config: parseConfig(env),
    assets: async (path) => (env.ASSETS ? env.ASSETS.fetch(new URL(path, "https://assets.invalid").toString()) : null),
  });
  cached = { key, app };
  return app;
}

export default {
  fetch(request: Request, env: WorkerEnv, ctx: ExecutionContext): Response | Promise<Response> {
    return appFor(env).fetch(request, env, ctx);
  },
};
