/**
 * Bearer-key authentication and role checks (RFC 6750, API.md §4).
 *
 * `authenticate` runs on every request: when an `Authorization: Bearer psk_…`
 * header is present it verifies the key (SHA-256 lookup, cached in memory for
 * at most `keyCacheTtlSeconds`) and sets `principal`. Public routes ignore the
 * result; `requireRole` on protected routes answers 401 (no valid key, with
 * `WWW-Authenticate: Bearer realm="petstore"`) or 403 (wrong role).
 * An address whose unknown keys failed more than RATE_LIMIT_ANON_PER_MIN
 * lookups in a minute gets 429 (instead of 401) for further unknown keys until
 * the minute ends; a key already known bad costs no lookup. A key that is not
 * known bad is always looked up, so throttling never refuses a valid key
 * (API.md §5; behind a proxy every client shares one address): an unknown
 * key costs at most one indexed point read, like any anonymous request.
 */
import { createMiddleware } from "hono/factory";
import type { MiddlewareHandler } from "hono";
import type { Role } from "../db/schema";
import type { AppEnv, Principal } from "../lib/context";
import { ApiError } from "../lib/errors";
import { looksLikeApiKey, sha256Hex } from "../services/api-keys";
import { verifyKey } from "../services/accounts.service";
import { MemoryRateLimiter } from "../lib/rate-limiter";
import { rateLimited } from "./rate-limit";

const MAX_CACHE_ENTRIES = 10_000;

/**
 * Verified keys by secret hash, each for at most `ttlMs`. Unknown keys are
 * cached too (as null) so that repeated bad keys cost no database round trip;
 * a new key can never hit such an entry since its hash has never been seen.
 * Holds settled values only, never a pending lookup: the cache lives as long as
 * the app (a Workers isolate serves many requests with it), and a promise made
 * by one request must not be awaited by another (workerd: "Cannot perform I/O
 * on behalf of a different request", see src/worker.ts). Concurrent first
 * requests with the same key therefore each do their own lookup.
 */
export class KeyCache {
  private readonly entries = new Map<string, { owner: Principal | null; expiresAt: number }>();

  constructor(private readonly ttlMs: number) {}

  /** The cached owner (null = known bad), or undefined when not cached or expired. */
  get(hash: string, nowMs: number): Principal | null | undefined {
    const entry = this.entries.get(hash);
    if (!entry) return undefined;
    if (entry.expiresAt <= nowMs) {
      this.entries.delete(hash);
      return undefined;
    }
    return entry.owner;
  }

  set(hash: string, owner: Principal | null, nowMs: number): void {
    if (this.ttlMs <= 0) return;
    if (this.entries.size >= MAX_CACHE_ENTRIES) this.entries.clear();
    this.entries.set(hash, { owner, expiresAt: nowMs + this.ttlMs });
  }

  /** Drop every entry of a revoked key, so it stops working at once in this process. */
  forget(apiKeyId: number): void {
    for (const [hash, entry] of this.entries) if (entry.owner?.apiKeyId === apiKeyId) this.entries.delete(hash);
  }

  /** Failed key lookups per client address, and addresses whose lookups are paused (until, epoch ms). */
  private readonly failures = new MemoryRateLimiter();
  private readonly paused = new Map<string, number>();

  /** Seconds during which unknown keys from `ip` are answered 429 (0: not throttled). */
  lookupPausedFor(ip: string, nowMs: number): number {
    const until = this.paused.get(ip);
    if (until === undefined) return 0;
    if (until <= nowMs) {
      this.paused.delete(ip);
      return 0;
    }
    return Math.ceil((until - nowMs) / 1000);
  }

  /**
   * Count a lookup of an unknown or revoked key from `ip`; past `limitPerMinute`
   * such lookups in a minute, that address's unknown keys are answered 429
   * until the minute ends (`lookupPausedFor`).
   */
  async recordFailedLookup(ip: string, limitPerMinute: number, now: Date): Promise<void> {
    const decision = await this.failures.consume(`badkey:${ip}`, limitPerMinute, 60, now);
    if (decision.allowed) return;
    if (this.paused.size >= MAX_CACHE_ENTRIES) this.paused.clear();
    this.paused.set(ip, now.getTime() + decision.resetSeconds * 1000);
  }
}

/** Global middleware: sets `principal` when a valid key is presented, `authProblem` when a bad one is. */
export function authenticate(cache: KeyCache): MiddlewareHandler<AppEnv> {
  return createMiddleware<AppEnv>(async (c, next) => {
    c.set("keyCache", cache);
    const header = c.req.header("Authorization");
    // Another scheme (Basic, …) is no credential of ours: treated like a missing key, so
    // the challenge carries no error code (RFC 6750 §3.1).
    if (header !== undefined && /^Bearer(\s|$)/i.test(header)) {
      const match = /^Bearer +(\S+)\s*$/i.exec(header);
      const token = match?.[1];
      if (!token || !looksLikeApiKey(token)) {
        c.set("authProblem", "malformed");
      } else {
        const now = c.get("now")();
        const hash = await sha256Hex(token);
        let owner = cache.get(hash, now.getTime());
        const ip = c.get("clientIp");
        const { anonPerMinute } = c.get("config").rateLimits;
        if (owner === undefined) {
          owner = await verifyKey(c.get("db"), hash, now);
          cache.set(hash, owner, now.getTime());
          if (!owner) await cache.recordFailedLookup(ip, anonPerMinute, now);
        }
        if (!owner) {
          // An address that keeps sending unknown keys gets 429 for them (never for a valid key).
          const pausedFor = cache.lookupPausedFor(ip, now.getTime());
          if (pausedFor > 0) {
            throw rateLimited({ allowed: false, limit: anonPerMinute, remaining: 0, resetSeconds: pausedFor }, "requests with unknown API keys");
          }
        }
        if (owner) c.set("principal", owner);
        else c.set("authProblem", "invalid");
      }
    }
    await next();
  });
}

const CHALLENGE = 'Bearer realm="petstore"';

/**
 * Require a valid key whose account has one of `roles`.
 * @throws ApiError 401 `unauthorized` (RFC 6750 §3 challenge), 403 `forbidden`.
 */
export function requireRole(...roles: Role[]): MiddlewareHandler<AppEnv> {
  return createMiddleware<AppEnv>(async (c, next) => {
    const principal = c.get("principal");
    if (!principal) {
      const problem = c.get("authProblem");
      const challenge = problem ? `${CHALLENGE}, error="invalid_token"` : CHALLENGE;
      const message = problem
        ? "The API key is malformed, unknown or revoked."
        : "This operation needs an API key: send Authorization: Bearer <API_KEY>.";
      throw new ApiError(401, "unauthorized", message, undefined, { "WWW-Authenticate": challenge });
    }
    if (!roles.includes(principal.role)) {
      throw new ApiError(403, "forbidden", `This operation needs a ${roles.join(" or ")} key.`);
    }
    await next();
  });
}
