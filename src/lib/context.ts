/**
 * The Hono environment shared by every router: what the app factory puts on
 * each request's context (`c.get(...)`).
 */
import type { AppConfig } from "../config";
import type { Database } from "../db/client";
import type { Role } from "../db/schema";

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
  };
}
