/** Runtime configuration (docs/configuration.md), parsed once from process.env (Node) or the Worker `env`; fails fast on a bad value. */
import { z } from "zod";
import { LOG_LEVELS, type LogLevel } from "./logger";

const bool = z.enum(["true", "false", "1", "0"]).transform((v) => v === "true" || v === "1");
const positiveInt = z.coerce.number().int().positive();

const EnvSchema = z.object({
  PUBLIC_BASE_URL: z.url().optional(),
  PETS_GET_SUNSET: z.iso.datetime().default("2027-06-30T00:00:00Z"),
  PETS_GET_DEPRECATED: z.iso.datetime().default("2026-07-01T00:00:00Z"),
  RATE_LIMIT_ANON_PER_MIN: positiveInt.default(120),
  RATE_LIMIT_KEY_PER_MIN: positiveInt.default(1200),
  RATE_LIMIT_SIGNUP_PER_HOUR: positiveInt.default(10),
  WEBHOOKS_ENABLED: bool.default(true),
  WEBHOOKS_ALLOW_PRIVATE: bool.default(false),
  WEBHOOKS_EGRESS: z.enum(["public", "host"]).default("host"),
  WEBHOOK_MAX_ATTEMPTS: positiveInt.default(8),
  WEBHOOK_RETRY_BASE_MS: positiveInt.default(30_000),
  WEBHOOK_RETRY_CAP_MS: positiveInt.default(3_600_000),
  WEBHOOK_TIMEOUT_MS: positiveInt.default(10_000),
  WEBHOOK_POLL_MS: positiveInt.default(1_000),
  WEBHOOKS_MAX: positiveInt.default(500),
  WEBHOOK_MAX_REDELIVERIES: positiveInt.default(1000),
  LOG_LEVEL: z.enum(LOG_LEVELS).default("info"),
  KEY_CACHE_TTL_SECONDS: z.coerce.number().int().min(0).max(30).default(30),
  READ_CACHE_TTL_SECONDS: z.coerce.number().int().min(0).max(30).default(30),
  EVENT_RETENTION_DAYS: positiveInt.default(30),
});

/** What a Worker's outbound `fetch` can reach (WEBHOOKS_EGRESS): `public` addresses only, or also the `host`'s private networks (docs/webhooks.md#targets). */
export type WebhookEgress = "public" | "host";

/** Validated configuration of one app instance. Times are Date, limits are counts. */
export interface AppConfig {
  /** Base URL for the OpenAPI `servers` default; request origin when absent. */
  publicBaseUrl?: string;
  /** When `GET /pets/{petId}` was deprecated (RFC 9745 `Deprecation`). */
  petsGetDeprecatedAt: Date;
  /** After this instant `GET /pets/{petId}` answers 410 (RFC 8594 `Sunset`). */
  petsGetSunsetAt: Date;
  rateLimits: { anonPerMinute: number; keyPerMinute: number; signupsPerHour: number };
  /** Webhook deliveries: the WEBHOOKS_* and WEBHOOK_* variables of docs/configuration.md, in that order; times in ms. */
  webhooks: {
    enabled: boolean;
    allowPrivateTargets: boolean;
    egress: WebhookEgress;
    maxAttempts: number;
    retryBaseMs: number;
    retryCapMs: number;
    timeoutMs: number;
    pollIntervalMs: number;
    /** Most subscriptions that may exist at once (WEBHOOKS_MAX). */
    maxSubscriptions: number;
    /** Most redeliveries (resends, tests, recoveries) queued for one subscription (WEBHOOK_MAX_REDELIVERIES). */
    maxRedeliveries: number;
  };
  /** How long a verified API key stays cached in memory, seconds (0..30). */
  keyCacheTtlSeconds: number;
  /** Node: how long a public read stays in the in-process cache, seconds (0 disables; ≤ s-maxage 30). */
  readCacheTtlSeconds: number;
  /** Lowest level of log lines written (LOG_LEVEL: debug, info, warn, error). */
  logLevel: LogLevel;
  /** Largest accepted request body, bytes (docs/api.md#limits: 64 KiB). */
  bodyLimitBytes: number;
  /** Events and revoked keys older than this many days are pruned (EVENT_RETENTION_DAYS, docs/api.md#events-and-webhooks). */
  eventRetentionDays: number;
}

const PortSchema = z.coerce.number().int().min(0).max(65_535);
/** How long a request's headers and body may take to arrive by default, ms (REQUEST_TIMEOUT_MS; docs/configuration.md). */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
const RequestTimeoutSchema = z.coerce.number().int().min(1000).max(300_000);
/** Requests one client address may have still arriving at once by default (MAX_UNFINISHED_PER_ADDRESS; 0: no cap). */
export const DEFAULT_MAX_UNFINISHED_PER_ADDRESS = 64;
const CapSchema = z.coerce.number().int().min(0).max(100_000);

/**
 * Where the Node server listens: HOST (default 127.0.0.1) and PORT (default 8787; 0 lets the system pick a free port), and how long a
 * request may take to arrive: REQUEST_TIMEOUT_MS (default 30 000; then 408, RFC 9110 §15.5.9), and how many may be arriving at once from
 * one address: MAX_UNFINISHED_PER_ADDRESS (default 64; then 429).
 * @throws Error naming the variable that is out of range.
 */
export function listenSettings(env: Record<string, string | undefined>): {
  hostname: string;
  port: number;
  requestTimeoutMs: number;
  maxUnfinishedPerAddress: number;
} {
  const raw = env.PORT?.trim() || "8787";
  const port = PortSchema.safeParse(raw);
  if (!port.success) throw new Error(`Invalid configuration: PORT: must be an integer from 0 to 65535, not ${JSON.stringify(env.PORT)}`);
  const timeout = RequestTimeoutSchema.safeParse(env.REQUEST_TIMEOUT_MS?.trim() || String(DEFAULT_REQUEST_TIMEOUT_MS));
  if (!timeout.success) {
    throw new Error(`Invalid configuration: REQUEST_TIMEOUT_MS: must be an integer from 1000 to 300000, not ${JSON.stringify(env.REQUEST_TIMEOUT_MS)}`);
  }
  const cap = CapSchema.safeParse(env.MAX_UNFINISHED_PER_ADDRESS?.trim() || String(DEFAULT_MAX_UNFINISHED_PER_ADDRESS));
  if (!cap.success) {
    throw new Error(
      `Invalid configuration: MAX_UNFINISHED_PER_ADDRESS: must be an integer from 0 to 100000, not ${JSON.stringify(env.MAX_UNFINISHED_PER_ADDRESS)}`,
    );
  }
  return { hostname: env.HOST || "127.0.0.1", port: port.data, requestTimeoutMs: timeout.data, maxUnfinishedPerAddress: cap.data };
}

/**
 * Parse configuration from environment variables.
 * @throws Error naming every invalid variable.
 */
export function parseConfig(env: Record<string, unknown>): AppConfig {
  const picked = Object.fromEntries(Object.keys(EnvSchema.shape).map((k) => [k, typeof env[k] === "string" && env[k] !== "" ? env[k] : undefined]));
  const parsed = EnvSchema.safeParse(picked);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
    throw new Error(`Invalid configuration: ${problems}`);
  }
  const e = parsed.data;
  return {
    publicBaseUrl: e.PUBLIC_BASE_URL,
    petsGetDeprecatedAt: new Date(e.PETS_GET_DEPRECATED),
    petsGetSunsetAt: new Date(e.PETS_GET_SUNSET),
    rateLimits: {
      anonPerMinute: e.RATE_LIMIT_ANON_PER_MIN,
      keyPerMinute: e.RATE_LIMIT_KEY_PER_MIN,
      signupsPerHour: e.RATE_LIMIT_SIGNUP_PER_HOUR,
    },
    webhooks: {
      enabled: e.WEBHOOKS_ENABLED,
      allowPrivateTargets: e.WEBHOOKS_ALLOW_PRIVATE,
      egress: e.WEBHOOKS_EGRESS,
      maxAttempts: e.WEBHOOK_MAX_ATTEMPTS,
      retryBaseMs: e.WEBHOOK_RETRY_BASE_MS,
      retryCapMs: e.WEBHOOK_RETRY_CAP_MS,
      timeoutMs: e.WEBHOOK_TIMEOUT_MS,
      pollIntervalMs: e.WEBHOOK_POLL_MS,
      maxSubscriptions: e.WEBHOOKS_MAX,
      maxRedeliveries: e.WEBHOOK_MAX_REDELIVERIES,
    },
    keyCacheTtlSeconds: e.KEY_CACHE_TTL_SECONDS,
    readCacheTtlSeconds: e.READ_CACHE_TTL_SECONDS,
    logLevel: e.LOG_LEVEL,
    bodyLimitBytes: 64 * 1024,
    eventRetentionDays: e.EVENT_RETENTION_DAYS,
  };
}
