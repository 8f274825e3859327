/** Settings (docs/configuration.md): zod schemas of the variables each runtime reads, read once by its entry; a bad start names every bad variable. */
import { z } from "zod";
import { LOG_LEVELS } from "./logger";

/** A whole number in min..max, written in decimal digits. */
const int = (min: number, max?: number) =>
  z
    .string()
    .refine(
      (v) => /^\d+$/.test(v) && +v >= min && +v <= (max ?? Number.MAX_SAFE_INTEGER),
      max === undefined ? `an integer ≥ ${min}` : `an integer from ${min} to ${max}`,
    )
    .transform(Number);
/** A number of hours > 0, fractions allowed, written in decimal digits. */
const hours = z
  .string()
  .refine((v) => /^\d+(\.\d+)?$/.test(v) && +v > 0, "a number of hours > 0 (fractions allowed)")
  .transform(Number);
const bool = z.enum(["true", "false", "1", "0"]).transform((v) => v === "true" || v === "1");
const instant = z.iso.datetime({ error: "an RFC 3339 date-time" });
const url = z.url({ error: "a URL" });
const protocol = z.enum(["http/protobuf", "http/json", "grpc"]).optional();
/**
 * OTEL_TRACES_SAMPLER values the Node SDK implements: the specification's list
 * (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/#general-sdk-configuration)
 * less `jaeger_remote`, `parentbased_jaeger_remote` and `xray`, which it would replace by its default without a word.
 */
export const TRACES_SAMPLERS = [
  "always_on",
  "always_off",
  "traceidratio",
  "parentbased_always_on",
  "parentbased_always_off",
  "parentbased_traceidratio",
] as const;
/** Most server processes per core (WEB_CONCURRENCY): beyond it they only contend for the CPU and multiply the memory. */
export const PROCESSES_PER_CORE = 2;
const cores = () => navigator.hardwareConcurrency;
/** `schema` refusing a WEBHOOK_RETRY_CAP_MS below WEBHOOK_RETRY_BASE_MS (min(cap, base·2^(n−1)) would never reach the base), once both parse. */
function withRetryCapRule<S extends z.ZodObject>(schema: S): S {
  type Retry = { WEBHOOK_RETRY_BASE_MS?: unknown; WEBHOOK_RETRY_CAP_MS?: unknown };
  return schema.refine(
    (e: Retry) =>
      typeof e.WEBHOOK_RETRY_BASE_MS !== "number" || typeof e.WEBHOOK_RETRY_CAP_MS !== "number" || e.WEBHOOK_RETRY_CAP_MS >= e.WEBHOOK_RETRY_BASE_MS,
    {
      path: ["WEBHOOK_RETRY_CAP_MS"],
      error: (issue) => `at least WEBHOOK_RETRY_BASE_MS (${(issue.input as Retry).WEBHOOK_RETRY_BASE_MS} ms)`,
      when: () => true,
    },
  );
}

/** What `createApp` is configured by; a default is what an unset or empty variable reads as. */
const AppSchema = z.object({
  PUBLIC_BASE_URL: url.optional(),
  PETS_GET_SUNSET: instant.default("2027-06-30T00:00:00Z"),
  PETS_GET_DEPRECATED: instant.default("2026-07-01T00:00:00Z"),
  RATE_LIMIT_ANON_PER_MIN: int(1).prefault("120"),
  RATE_LIMIT_KEY_PER_MIN: int(1).prefault("1200"),
  RATE_LIMIT_SIGNUP_PER_HOUR: int(1).prefault("10"),
  WEBHOOKS_ENABLED: bool.prefault("true"),
  WEBHOOKS_ALLOW_PRIVATE: bool.prefault("false"),
  WEBHOOKS_EGRESS: z.enum(["public", "host"]).default("host"),
  WEBHOOK_MAX_ATTEMPTS: int(1).prefault("8"),
  WEBHOOK_RETRY_BASE_MS: int(1).prefault("30000"),
  WEBHOOK_RETRY_CAP_MS: int(1).prefault("3600000"),
  WEBHOOK_TIMEOUT_MS: int(1).prefault("10000"),
  WEBHOOK_POLL_MS: int(1).prefault("1000"),
  WEBHOOKS_MAX: int(1).prefault("500"),
  WEBHOOK_MAX_REDELIVERIES: int(1).prefault("1000"),
  WEBHOOK_CONCURRENCY: int(1, 10_000).prefault("100"),
  WEBHOOK_DISABLE_AFTER_HOURS: hours.prefault("120"),
  LOG_LEVEL: z.enum(LOG_LEVELS).default("info"),
  KEY_CACHE_TTL_SECONDS: int(0, 30).prefault("30"),
  READ_CACHE_TTL_SECONDS: int(0, 30).prefault("30"),
  EVENT_RETENTION_DAYS: int(1).prefault("30"),
});
const SHARED = { ...AppSchema.shape, DATABASE_URL: z.string().default("file:.data/petstore.db"), DATABASE_AUTH_TOKEN: z.string().optional() };

const NodeSchema = z
  .object({
    ...SHARED,
    DATABASE_SYNC_URL: z.string().optional(),
    DATABASE_SYNC_INTERVAL_SECONDS: int(0).prefault("5"),
    DATABASE_LOCK_TIMEOUT_MS: int(0).prefault("5000"),
    DATABASE_REQUEST_TIMEOUT_MS: int(0).prefault("10000"),
    HOST: z.string().default("127.0.0.1"),
    PORT: int(0, 65_535).prefault("8787"),
    REQUEST_TIMEOUT_MS: int(1000, 300_000).prefault("30000"),
    MAX_UNFINISHED_PER_ADDRESS: int(0, 100_000).prefault("64"),
    WEB_CONCURRENCY: z
      .string()
      .regex(/^(auto|[1-9]\d*)$/i, 'a whole number ≥ 1 or "auto"')
      .transform((v) => (v.toLowerCase() === "auto" ? cores() : Number(v)))
      .refine((n) => n <= PROCESSES_PER_CORE * cores(), {
        error: () => `at most ${PROCESSES_PER_CORE * cores()} (${PROCESSES_PER_CORE} per core, ${cores()} cores)`,
      })
      .prefault("1"),
    TRUST_PROXY: z
      .string()
      .regex(/^(false|true|\d{1,2})$/, "false, true or a number of proxies (0-99)")
      .transform((v) => (v === "false" ? 0 : v === "true" ? 1 : Number(v)))
      .prefault("false"),
    METRICS_PORT: int(1, 65_535).optional(),
    METRICS_HOST: z.string().default("127.0.0.1"),
    OTEL_EXPORTER_OTLP_ENDPOINT: z.string().optional(),
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.string().optional(),
    OTEL_TRACES_EXPORTER: z.string().optional(),
    OTEL_SDK_DISABLED: z.string().optional(),
    OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: protocol,
    OTEL_TRACES_SAMPLER: z.enum(TRACES_SAMPLERS).optional(),
  })
  .refine((e) => !e.DATABASE_SYNC_URL || e.DATABASE_URL.startsWith("file:"), {
    path: ["DATABASE_SYNC_URL"],
    message: "unset unless DATABASE_URL is a file: URL (the local replica)",
    when: () => true,
  });

const WorkerSchema = z.object({
  ...SHARED,
  CACHE_PURGE_PER_MINUTE: int(1).optional(),
  CACHE_PURGE_BURST: int(1).optional(),
  CACHE_PURGE_REPEAT_MS: int(0).optional(),
  CACHE_PURGE_CAPTURE_URL: url.optional(),
});

/** Every runtime's schema, for the check that docs/configuration.md documents each variable and its default. */
export const SETTINGS_SCHEMAS = { node: NodeSchema, worker: WorkerSchema };
/** The schemas `read` parses by: each with the rules across variables. */
const CHECKED = { app: withRetryCapRule(AppSchema), node: withRetryCapRule(NodeSchema), worker: withRetryCapRule(WorkerSchema) };

/** What a Worker's outbound `fetch` can reach (WEBHOOKS_EGRESS): `public` addresses only, or also the `host`'s private networks (docs/webhooks.md#targets). */
export type WebhookEgress = "public" | "host";

/** `schema`'s variables of `env` (trimmed; empty or not a string: unset), parsed and handed to `build`. @throws Error "Invalid configuration: X: must be …, not "…"; Y: …". */
function read<S extends z.ZodObject, T>(schema: S, env: Record<string, unknown>, build: (e: z.output<S>) => T): T {
  const raw = (name: PropertyKey) => (typeof env[name as string] === "string" ? (env[name as string] as string).trim() || undefined : undefined);
  const parsed = schema.safeParse(Object.fromEntries(Object.keys(schema.shape).map((name) => [name, raw(name)])), {
    error: (issue) => (issue.code === "invalid_value" ? `one of ${issue.values.join(", ")}` : undefined),
  });
  if (parsed.success) return build(parsed.data);
  const problems = parsed.error.issues.map(
    ({ path: [name = ""], message }) =>
      `${String(name)}: must be ${message}, not ${raw(name) === undefined ? "its default" : JSON.stringify(env[name as string])}`,
  );
  throw new Error(`Invalid configuration: ${problems.join("; ")}`);
}

/** Validated configuration of one app instance (the AppSchema variables, docs/configuration.md): times are Date, limits counts, durations ms. */
function appConfig(e: z.output<typeof AppSchema>) {
  return {
    /** Base URL for the OpenAPI `servers` default; request origin when absent. */
    publicBaseUrl: e.PUBLIC_BASE_URL,
    /** When `GET /pets/{petId}` was deprecated (RFC 9745 `Deprecation`); after `petsGetSunsetAt` it answers 410 (RFC 8594 `Sunset`). */
    petsGetDeprecatedAt: new Date(e.PETS_GET_DEPRECATED),
    petsGetSunsetAt: new Date(e.PETS_GET_SUNSET),
    rateLimits: { anonPerMinute: e.RATE_LIMIT_ANON_PER_MIN, keyPerMinute: e.RATE_LIMIT_KEY_PER_MIN, signupsPerHour: e.RATE_LIMIT_SIGNUP_PER_HOUR },
    webhooks: {
      enabled: e.WEBHOOKS_ENABLED,
      allowPrivateTargets: e.WEBHOOKS_ALLOW_PRIVATE,
      egress: e.WEBHOOKS_EGRESS,
      maxAttempts: e.WEBHOOK_MAX_ATTEMPTS,
      retryBaseMs: e.WEBHOOK_RETRY_BASE_MS,
      retryCapMs: e.WEBHOOK_RETRY_CAP_MS,
      timeoutMs: e.WEBHOOK_TIMEOUT_MS,
      pollIntervalMs: e.WEBHOOK_POLL_MS,
      /** Most subscriptions that may exist at once (WEBHOOKS_MAX). */
      maxSubscriptions: e.WEBHOOKS_MAX,
      /** Most redeliveries (resends, tests, recoveries) queued for one subscription. */
      maxRedeliveries: e.WEBHOOK_MAX_REDELIVERIES,
      /** Most sends in flight per process (Node) or dispatch run (Workers: also bounded by its connections). */
      concurrency: e.WEBHOOK_CONCURRENCY,
      /** A subscription whose every attempt failed for this many hours is disabled. */
      disableAfterHours: e.WEBHOOK_DISABLE_AFTER_HOURS,
    },
    /** Seconds a verified API key stays cached in memory (0..30). */
    keyCacheTtlSeconds: e.KEY_CACHE_TTL_SECONDS,
    /** Node: seconds a public read stays in the in-process cache (0 disables; ≤ s-maxage 30). */
    readCacheTtlSeconds: e.READ_CACHE_TTL_SECONDS,
    logLevel: e.LOG_LEVEL,
    /** Largest accepted request body, bytes (docs/api.md#limits: 64 KiB). */
    bodyLimitBytes: 64 * 1024,
    /** Events and revoked keys older than this many days are pruned (docs/api.md#events-and-webhooks). */
    eventRetentionDays: e.EVENT_RETENTION_DAYS,
  };
}

/** What `parseConfig` returns: one app instance's configuration. */
export type AppConfig = ReturnType<typeof appConfig>;

/** The app's configuration alone, from `env` (tests and scripts that build an app). @throws Error naming every bad variable. */
export function parseConfig(env: Record<string, unknown>): AppConfig {
  return read(CHECKED.app, env, appConfig);
}

/**
 * The Node server's settings from `env` (process.env): the app's, the database's, listening, processes, trusted proxies and telemetry
 * (traces on with an OTLP endpoint or an exporter other than `none`, unless OTEL_SDK_DISABLED=true). @throws Error naming every bad variable.
 */
export function nodeSettings(env: Record<string, unknown>) {
  return read(CHECKED.node, env, (e) => {
    const exporter = e.OTEL_TRACES_EXPORTER;
    const traces =
      e.OTEL_SDK_DISABLED?.toLowerCase() !== "true" &&
      (exporter ? exporter !== "none" : Boolean(e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? e.OTEL_EXPORTER_OTLP_ENDPOINT));
    return {
      app: appConfig(e),
      database: {
        url: e.DATABASE_URL,
        authToken: e.DATABASE_AUTH_TOKEN,
        syncUrl: e.DATABASE_SYNC_URL,
        syncIntervalSeconds: e.DATABASE_SYNC_INTERVAL_SECONDS,
        lockWaitMs: e.DATABASE_LOCK_TIMEOUT_MS,
        requestTimeoutMs: e.DATABASE_REQUEST_TIMEOUT_MS,
      },
      listen: { hostname: e.HOST, port: e.PORT, requestTimeoutMs: e.REQUEST_TIMEOUT_MS, maxUnfinishedPerAddress: e.MAX_UNFINISHED_PER_ADDRESS },
      processes: e.WEB_CONCURRENCY,
      trustedProxies: e.TRUST_PROXY,
      telemetry: { traces, metrics: e.METRICS_PORT === undefined ? undefined : { host: e.METRICS_HOST, port: e.METRICS_PORT } },
    };
  });
}

/** The Worker's settings from its `env`: the app's, the libSQL server's, and the tests' purge overrides (CACHE_PURGE_*). @throws Error naming every bad variable. */
export function workerSettings(env: Record<string, unknown>) {
  return read(CHECKED.worker, env, (e) => ({
    app: appConfig(e),
    database: { url: e.DATABASE_URL, authToken: e.DATABASE_AUTH_TOKEN },
    purge: { perMinute: e.CACHE_PURGE_PER_MINUTE, burst: e.CACHE_PURGE_BURST, repeatAfterMs: e.CACHE_PURGE_REPEAT_MS, captureUrl: e.CACHE_PURGE_CAPTURE_URL },
  }));
}

/** What `nodeSettings` returns. */
export type NodeSettings = ReturnType<typeof nodeSettings>;
/** What `workerSettings` returns. */
export type WorkerSettings = ReturnType<typeof workerSettings>;
