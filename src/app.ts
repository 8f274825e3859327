/** `createApp(deps)`: the whole API as one OpenAPIHono app, built only from its deps; it keeps plain data only between requests. */
import { Hono, type Context, type MiddlewareHandler } from "hono";
import { cors } from "hono/cors";
import { requestId } from "hono/request-id";
import { secureHeaders } from "hono/secure-headers";
import type { AppConfig } from "./config";
import type { Database } from "./db/client";
import type { AppEnv, ClientIp, WriteListener } from "./http/context";
import { createRouter } from "./http/router";
import { ApiError } from "./http/errors";
import { MemoryRateLimiter, type RateLimiter } from "./http/rate-limiter";
import { authenticate } from "./middleware/auth";
import { KeyCache } from "./http/key-cache";
import { errorHandler, notFoundHandler } from "./middleware/errors";
import { idempotency } from "./middleware/idempotency";
import { afterWrites } from "./middleware/after-writes";
import { requestLog } from "./middleware/request-log";
import { closeAfterUnreadBody, limitBody } from "./middleware/unread-body";
import { knownTransferCodings } from "./middleware/transfer-codings";
import { roundTripsPerRequest } from "./db/round-trips";
import { PUBLIC_CACHE_CONTROL } from "./http/caching";
import { ping } from "./db/plan";
import { consoleSink, jsonLogger, type Logger, type LogSink } from "./logger";
import type { RequestTelemetry } from "./telemetry/request-metrics";
import { rateLimit } from "./middleware/rate-limit";
import { accountsRouter } from "./routes/accounts/accounts.index";
import { ordersRouter } from "./routes/orders/orders.index";
import { categoriesRouter } from "./routes/categories/categories.index";
import { inventoryRouter } from "./routes/inventory/inventory.index";
import { createMetaRouter } from "./routes/meta/meta.index";
import type { AssetSource } from "./http/assets";
import { petsRouter } from "./routes/pets/pets.index";
import { eventsRouter } from "./routes/events/events.index";
import { webhooksRouter } from "./routes/webhooks/webhooks.index";

/** A dependency: one value shared by every request (Node), or a function building it per request from its context (Workers: I/O belongs to one request). */
export type PerRequest<T extends object> = T | ((c: Context<AppEnv>) => T);

function resolve<T extends object>(dep: PerRequest<T>, c: Context<AppEnv>): T {
  return typeof dep === "function" ? (dep as (c: Context<AppEnv>) => T)(c) : dep;
}

/** Everything the app needs from its runtime. */
export interface AppDeps {
  /** The database: one handle, or one per request (Workers). */
  db: PerRequest<Database>;
  config: AppConfig;
  /** Current time (default: the system clock); tests inject their own. */
  clock?: () => Date;
  /** Where JSON log lines at `config.logLevel` and above go (default: console); never receives secrets. */
  log?: LogSink;
  /** The logger itself, instead of JSON lines to `log` (Node: pino, src/runtime/node/pino-logger.ts). */
  logger?: Logger;
  /** Static files of the docs page (Node: node_modules; Workers: static assets). */
  assets?: AssetSource;
  /** Request counter (default: in memory, per process); one, or one per request (Workers). */
  rateLimiter?: PerRequest<RateLimiter>;
  /** What `GET /health` checks: resolves when the database answers and can be written, rejects otherwise (503). Default: `SELECT 1` answers. */
  checkDatabase?: (c: Context<AppEnv>) => Promise<void>;
  /** The client's address (default: none known, all anonymous clients share one bucket). */
  clientIp?: ClientIp;
  /** Runtime middleware run after authentication and rate limiting, before the routes (Workers: the edge policy; Node: the read cache). */
  middleware?: MiddlewareHandler<AppEnv>[];
  /** Called in this order after every write that committed outbox events (cache purges, dispatch nudges). */
  afterWrite?: WriteListener[];
  /** Telemetry when switched on (Node, docs/operations.md#traces): the request span's middleware, outermost but the request id, and the request line's observer. */
  telemetry?: RequestTelemetry & { middleware?: MiddlewareHandler<AppEnv>[] };
  /** Starts a webhook dispatch run soon, after a redelivery or test was queued (default: none; the next poll or cron runs it). */
  dispatchSoon?: (c: Context<AppEnv>) => void;
  /** Called after a subscription was created, changed or deleted (what the dispatch knows of their types is stale). */
  subscriptionsChanged?: () => void;
}

/** Request headers a browser client may send (CORS, docs/api.md#conventions). */
const ALLOWED_HEADERS = ["Authorization", "Content-Type", "Idempotency-Key", "If-Match", "If-None-Match"];
const EXPOSED_HEADERS = [
  "ETag",
  "Link",
  "Location",
  "RateLimit-Limit",
  "RateLimit-Remaining",
  "RateLimit-Reset",
  "Retry-After",
  "Deprecation",
  "Sunset",
  "X-Request-Id",
  "Idempotent-Replayed",
];

/** Fix-ups on the final response: JSON's charset and a Cache-Control on every response. */
const fixUps: MiddlewareHandler = async (c, next) => {
  await next();
  const headers = c.res.headers;
  // docs/api.md#conventions: JSON is `application/json; charset=utf-8` (RFC 8259 §8.1: UTF-8).
  if (headers.get("Content-Type") === "application/json") headers.set("Content-Type", "application/json; charset=utf-8");
  // No stated policy: stored by no cache, rather than by heuristic freshness (RFC 9111 §4.2.2; docs/caching.md#headers).
  if (!headers.has("Cache-Control")) headers.set("Cache-Control", "no-store");
};
const secure = secureHeaders({
  // The docs page runs Scalar's script from this origin only.
  contentSecurityPolicy: {
    defaultSrc: ["'self'"],
    scriptSrc: ["'self'", "'unsafe-inline'"],
    styleSrc: ["'self'", "'unsafe-inline'"],
    imgSrc: ["'self'", "data:"],
    fontSrc: ["'self'", "data:"],
    connectSrc: ["'self'"],
  },
  // Headers for legacy browsers and plug-ins say nothing to an API's clients, and each costs every response.
  xXssProtection: false,
  xDownloadOptions: false,
  xDnsPrefetchControl: false,
  xPermittedCrossDomainPolicies: false,
  originAgentCluster: false,
});
const corsHeaders = cors({ origin: "*", allowHeaders: ALLOWED_HEADERS, exposeHeaders: EXPOSED_HEADERS, maxAge: 600 });
/** Hono's cors: as it is for a preflight, on the final response for anything else. */
const stampCors: MiddlewareHandler = async (c, next) => {
  if (c.req.method === "OPTIONS") return corsHeaders(c, next);
  // After next(): headers written into c.res before it make Hono copy the final response, off node-server's fast path.
  await next();
  await corsHeaders(c, async () => {});
};
/** The middleware that sets the headers of every response besides its route's own, outermost first. */
const RESPONSE_LAYERS = [fixUps, secure, stampCors];

/** The headers (lowercase) the response middleware add to a JSON answer with `routeHeaders`, but per-request ones: for a runtime's own answers. */
export async function responseHeaders(routeHeaders: Record<string, string> = { "Cache-Control": PUBLIC_CACHE_CONTROL }): Promise<[string, string][]> {
  let own = new Headers();
  const probe = new Hono();
  probe.use(...RESPONSE_LAYERS, async (c, next) => {
    await next();
    own = new Headers(c.res.headers);
  });
  probe.get("/", (c) => c.json(null, 200, routeHeaders));
  const answer = await probe.request("/");
  return [...answer.headers].filter(([name, value]) => own.get(name) !== value);
}

/** Build the app; its type is `AppType`. */
export function createApp(deps: AppDeps) {
  const { config } = deps;
  const now = deps.clock ?? (() => new Date());
  const logger = deps.logger ?? jsonLogger(config.logLevel, deps.log ?? consoleSink);
  // Every database call of a request is counted for its log line (a shared database is wrapped once).
  const roundTrips = roundTripsPerRequest();
  const given = deps.db;
  const db: PerRequest<Database> = typeof given === "function" ? (c) => roundTrips.wrap(given(c)) : roundTrips.wrap(given);
  const rateLimiter: PerRequest<RateLimiter> = deps.rateLimiter ?? new MemoryRateLimiter();
  const clientIp = deps.clientIp ?? (() => undefined);
  const dispatchSoon = deps.dispatchSoon ?? (() => {});
  const subscriptionsChanged = deps.subscriptionsChanged ?? (() => {});
  const keyCache = new KeyCache(config.keyCacheTtlSeconds * 1000, () => now().getTime());
  const app = createRouter();

  app.use(requestId());
  for (const handler of deps.telemetry?.middleware ?? []) app.use(handler);
  app.use(requestLog(logger, roundTrips, deps.telemetry));
  app.use(closeAfterUnreadBody);
  app.use(knownTransferCodings);
  app.use(...RESPONSE_LAYERS);
  app.use(async (c, next) => {
    c.set("db", resolve(db, c));
    c.set("config", config);
    c.set("now", now);
    c.set("dispatchSoon", dispatchSoon);
    c.set("subscriptionsChanged", subscriptionsChanged);
    c.set("rateLimiter", resolve(rateLimiter, c));
    c.set("clientIp", clientIp(c) ?? "unknown");
    await next();
  });
  app.use(afterWrites(deps.afterWrite ?? [], logger));
  const tooLarge = () => new ApiError(413, "payload_too_large", `The request body is larger than ${config.bodyLimitBytes / 1024} KiB.`);
  app.use(limitBody(config.bodyLimitBytes, tooLarge));
  app.use(authenticate(keyCache));
  app.use(rateLimit);
  app.use(idempotency);
  for (const handler of deps.middleware ?? []) app.use(handler);

  const meta = createMetaRouter(() => app, deps.assets, deps.checkDatabase ?? ((c) => ping(c.get("db"))));
  // One chain, so that the returned router's type (`AppType`) carries every route (https://hono.dev/docs/guides/rpc).
  const routed = app
    .route("/", petsRouter)
    .route("/", categoriesRouter)
    .route("/", inventoryRouter)
    .route("/", ordersRouter)
    .route("/", accountsRouter)
    .route("/", eventsRouter)
    .route("/", webhooksRouter)
    .route("/", meta);

  app.notFound(notFoundHandler(() => app.routes));
  app.onError(errorHandler(logger));
  return routed;
}

/** The typed route tree of the app, for Hono's typed client `hc<AppType>(baseUrl)` (docs/clients.md). */
export type AppType = ReturnType<typeof createApp>;
