/**
 * The Hono environment shared by every router: what the app factory puts on
 * each request's context (`c.get(...)`).
 */
import type { AppConfig } from "../config";
import type { Database } from "../db/client";
import type { Role } from "../db/schema";
import type { KeyCache } from "../middleware/auth";
import type { RateLimiter } from "./rate-limiter";

/** The authenticated caller, set by the authentication middleware. */
export interface Principal {
  accountId: number;
  role: Role;
  apiKeyId: number;
}

/** Services and settings one request can reach. */
export interface RequestServices {
  db: Database;
  config: AppConfig;
  /** Current time; injected so tests control it. */
  now: () => Date;
}

export interface AppEnv {
  Bindings: Record<string, unknown>;
  Variables: RequestServices & {
    requestId: string;
    principal?: Principal;
    /** Why a presented key was not accepted (it is only an error on protected routes). */
    authProblem?: "malformed" | "invalid";
    keyCache: KeyCache;
    rateLimiter: RateLimiter;
    /** The client's address as the runtime reports it ("unknown" when it cannot). */
    clientIp: string;
  };
}
