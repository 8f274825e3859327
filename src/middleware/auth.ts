/** Bearer-key authentication and role checks (RFC 6750, docs/api.md#authentication, docs/architecture.md#unknown-api-keys). */
import { createMiddleware } from "hono/factory";
import type { MiddlewareHandler } from "hono";
import type { Principal, Role } from "../domain/principal";
import type { AppEnv } from "../http/context";
import { ApiError } from "../http/errors";
import { looksLikeApiKey, sha256Hex } from "../services/api-keys";
import { verifyKey } from "../services/key-verification";
import { keyHashesAfter } from "../services/key-index";
import { KEY_INDEX_REFRESH_MS, type KeyCache } from "../http/key-cache";
import { rateLimited } from "./rate-limit";

/** Global middleware: sets `principal` when a valid key is presented, `authProblem` when a bad one is. */
export function authenticate(cache: KeyCache): MiddlewareHandler<AppEnv> {
  return createMiddleware<AppEnv>(async (c, next) => {
    c.set("keyCache", cache);
    const header = c.req.header("Authorization");
    // Another scheme (Basic, …) counts as a missing key: the challenge carries no error code (RFC 6750 §3.1).
    if (header !== undefined && /^Bearer(\s|$)/i.test(header)) {
      const token = /^Bearer +(\S+)\s*$/i.exec(header)?.[1];
      if (!token || !looksLikeApiKey(token)) {
        c.set("authProblem", "malformed");
      } else {
        const now = c.get("now")();
        const hash = await sha256Hex(token);
        let owner = cache.get(hash);
        const ip = c.get("clientIp");
        const { anonPerMinute } = c.get("config").rateLimits;
        const db = c.get("db");
        const readKeys = (afterId: number, limit: number) => keyHashesAfter(db, afterId, limit);
        const unknownKeys = (resetSeconds: number) =>
          rateLimited({ allowed: false, limit: anonPerMinute, remaining: 0, resetSeconds }, "requests with unknown API keys");
        if (owner === undefined) {
          // A paused address's key is looked up only when it may exist (a guess costs no statement); Retry-After: the index's refresh.
          const pausedFor = cache.lookupPausedFor(ip);
          if (pausedFor > 0 && !(await cache.mayExist(hash, readKeys))) throw unknownKeys(Math.min(pausedFor, Math.ceil(KEY_INDEX_REFRESH_MS / 1000)));
          owner = await verifyKey(db, hash, now);
          cache.set(hash, owner);
          if (owner) cache.rememberKey(hash);
          else {
            await cache.recordFailedLookup(ip, anonPerMinute);
            // The pause begins: read the index now, so the guesses that follow cost no statement.
            if (cache.lookupPausedFor(ip) > 0 && !cache.indexFresh()) await cache.refreshIndex(readKeys);
          }
        }
        // An address that keeps sending unknown keys gets 429 for them (never for a valid key).
        const pausedFor = owner ? 0 : cache.lookupPausedFor(ip);
        if (pausedFor > 0) throw unknownKeys(pausedFor);
        if (owner) c.set("principal", owner);
        else c.set("authProblem", "invalid");
      }
    }
    await next();
  });
}

const CHALLENGE = 'Bearer realm="petstore"';

/** The principal `requireRole` let through (always present behind it). */
export const caller = (c: { get(key: "principal"): Principal | undefined }): Principal => c.get("principal")!;

/** Require a valid key whose account has one of `roles`. @throws ApiError 401 `unauthorized` (RFC 6750 §3 challenge), 403 `forbidden`. */
export function requireRole(...roles: Role[]): MiddlewareHandler<AppEnv> {
  return createMiddleware<AppEnv>(async (c, next) => {
    const principal = c.get("principal");
    if (!principal) {
      const problem = c.get("authProblem");
      const challenge = problem ? `${CHALLENGE}, error="invalid_token"` : CHALLENGE;
      const message = problem ? "The API key is malformed, unknown or revoked." : "This operation needs an API key: send Authorization: Bearer <API_KEY>.";
      throw new ApiError(401, "unauthorized", message, undefined, { "WWW-Authenticate": challenge });
    }
    if (!roles.includes(principal.role)) {
      throw new ApiError(403, "forbidden", `This operation needs a ${roles.join(" or ")} key.`);
    }
    await next();
  });
}
