/**
 * After-write hooks: `afterWrites(onWrite)` tells a runtime that a write
 * succeeded and which outbox events it committed (src/db/commit-log.ts);
 * `dispatchAfterWrites` starts a webhook dispatch run only when a committed
 * event may be wanted by a subscription (docs/api.md#events-and-webhooks: a write with no event for
 * a subscription starts no delivery work).
 */
import type { Context, MiddlewareHandler } from "hono";
import { type CommittedEvent, recordCommitted, withCommitLog } from "../db/commit-log";
import type { AppEnv } from "../http/context";
import type { SubscribedTypes } from "../services/webhooks/interest";

const WRITE_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/**
 * App middleware (AppDeps.middleware) that calls `onWrite(c, committed)` after
 * every successful write (POST/PUT/PATCH/DELETE answered 2xx), with the outbox
 * events it committed, in commit order. The events stay in any enclosing
 * commit log (e.g. a cache purge's).
 */
export function afterWrites(onWrite: (c: Context<AppEnv>, committed: CommittedEvent[]) => void): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (!WRITE_METHODS.has(c.req.method)) return next();
    const { events, error } = await withCommitLog(next);
    recordCommitted(events);
    if (error !== undefined) throw error;
    if (c.res.status >= 200 && c.res.status < 300) onWrite(c, events);
  };
}

/**
 * `afterWrites` that calls `start(c)` (which starts a dispatch run) only when
 * `interest` says a subscription may want one of the committed event types.
 */
export function dispatchAfterWrites(interest: SubscribedTypes, start: (c: Context<AppEnv>) => void): MiddlewareHandler<AppEnv> {
  return afterWrites((c, committed) => {
    if (interest.mayWant(committed.map((event) => event.type))) start(c);
  });
}
