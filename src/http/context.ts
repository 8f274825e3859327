/** The Hono environment shared by every router: what the app puts on each request's context (`c.get(...)`). */
import type { AppConfig } from "../config";
import type { Context } from "hono";
import type { CommittedEvent, Database } from "../db/client";
import type { KeyClaim } from "../domain/idempotency";
import type { Principal } from "../domain/principal";
import type { KeyCache } from "./key-cache";
import type { CacheOutcome } from "../telemetry/request-metrics";
import type { RateLimiter } from "./rate-limiter";

export interface AppEnv {
  Bindings: Record<string, unknown>;
  Variables: {
    db: Database;
    config: AppConfig;
    /** Current time; injected so tests control it. */
    now: () => Date;
    /** Start a webhook dispatch run soon (after a redelivery was queued); the runtime's, or nothing (the next poll or cron runs it). */
    dispatchSoon: (c: Context<AppEnv>) => void;
    /** A subscription was created, changed or deleted: the runtime's dispatch knowledge of their types is stale. */
    subscriptionsChanged: () => void;
    requestId: string;
    /** The authenticated caller, set by the authentication middleware. */
    principal?: Principal;
    /** The Idempotency-Key claim of a POST that honours it (set by the idempotency middleware; its service claims the key in its batch). */
    keyClaim?: KeyClaim;
    /** Why a presented key was not accepted (it is only an error on protected routes). */
    authProblem?: "malformed" | "invalid";
    keyCache: KeyCache;
    rateLimiter: RateLimiter;
    /** The client's address as the runtime reports it ("unknown" when it cannot). */
    clientIp: string;
    /** The read cache's outcome (its `X-Cache` header tells the client). */
    cache?: CacheOutcome;
  };
}

/** How the runtime tells a client's address (socket on Node, CF-Connecting-IP on Workers). */
export type ClientIp = (c: Context<AppEnv>) => string | undefined;

/** A runtime's hook after a write: the events it committed, in commit order, before its response is sent (docs/architecture.md#events-after-a-write). */
export type WriteListener = (c: Context<AppEnv>, committed: readonly CommittedEvent[]) => void | Promise<void>;
