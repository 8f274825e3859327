/**
 * Node: the edge's last guard answers an anonymous `GET` whose complete answer the read cache holds, spending the app's budget and logged by
 * `logRequest`; any other request goes on to the app (docs/architecture.md#node-the-edge-before-the-app).
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { AppConfig } from "../../config";
import { elapsedMs, type Logger, logRequest } from "../../logger";
import type { RequestTelemetry } from "../../telemetry/request-metrics";
import { type RateLimiter, requestBudget } from "../../http/rate-limiter";
import type { Guard } from "./edge";
import { hitHeaders, type MemoryReadCache } from "./memory-read-cache";

/** A Host @hono/node-server uses as it is (its `buildUrl`). */
const PLAIN_HOST = /^[a-z0-9._-]+(?::(?:[1-5]\d{3,4}|[6-9]\d{3}))?$/;
/** A request target @hono/node-server passes on unchanged: origin-form, no escapes, no dot segments. */
const PLAIN_TARGET = /^\/[A-Za-z0-9\-_~/?=&.,:;!*+@$]*$/;
const DOT_SEGMENT = /\/\.\.?(?:[/?]|$)/;

export interface CacheHitOptions {
  cache: MemoryReadCache;
  /** The app's limiter (the same instance, so a hit spends the same budget). */
  rateLimiter: RateLimiter;
  config: AppConfig;
  logger: Logger;
  /** The client's address, as the app reads it. */
  clientIp: (req: IncomingMessage) => string | undefined;
  /** Observes each hit's line as the app's telemetry does (metrics); hits make no span. */
  telemetry?: RequestTelemetry;
}

/** The guard: answers `req` from the cache when it can, else calls `next`. */
export function cacheHits(options: CacheHitOptions): Guard {
  const { cache, rateLimiter, config, logger, clientIp, telemetry } = options;

  return (req, res, next) => {
    const headers = req.headers;
    const target = req.url ?? "";
    if (
      req.method !== "GET" ||
      headers.authorization !== undefined ||
      headers["x-request-id"] !== undefined ||
      headers["if-none-match"] !== undefined ||
      headers["content-length"] !== undefined ||
      headers["transfer-encoding"] !== undefined ||
      !PLAIN_HOST.test(headers.host ?? "") ||
      !PLAIN_TARGET.test(target) ||
      DOT_SEGMENT.test(target)
    )
      return next();
    const started = performance.now();
    const hit = cache.completeHit(target);
    if (!hit) return next();
    void rateLimiter.consume(requestBudget(config.rateLimits, undefined, clientIp(req) ?? "unknown"), new Date()).then((decision) => {
      // A refusal counted nothing: the app refuses it again, with its Error object.
      if (!decision.allowed) return next();
      const requestId = randomUUID();
      res.writeHead(200, hitHeaders(hit.headers, requestId, decision));
      res.end(hit.body);
      logRequest(
        logger,
        { requestId, method: "GET", route: hit.route, status: 200, durationMs: elapsedMs(started), dbRoundTrips: 0, cache: "HIT", accountId: null },
        telemetry,
      );
    }, next);
  };
}
