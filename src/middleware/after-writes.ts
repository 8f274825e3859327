/** Committed outbox events to the runtime's listeners before the response (docs/architecture.md#events-after-a-write). */
import type { Context, MiddlewareHandler } from "hono";
import type { CommittedEvent } from "../db/client";
import { keepingCommits } from "../db/plan";
import type { AppEnv, WriteListener } from "../http/context";
import { type Logger, loggableError } from "../logger";
import type { SubscribedTypes } from "../services/webhooks/interest";

/** The methods that write (RFC 9110 §9.2.1: not safe). */
export const WRITE_METHODS: ReadonlySet<string> = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/** App middleware after the one that sets `db`: awaits each of `listeners`, in order, with a write's committed events; failures go to `logger`. */
export function afterWrites(listeners: readonly WriteListener[], logger: Logger): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (listeners.length === 0 || !WRITE_METHODS.has(c.req.method)) return next();
    const committed: CommittedEvent[] = [];
    c.set("db", keepingCommits(c.get("db"), committed));
    try {
      await next();
    } finally {
      // The write committed: a listener that fails is logged, and neither the answer nor the next listener depends on it.
      for (const listener of committed.length > 0 ? listeners : []) {
        await Promise.resolve()
          .then(() => listener(c, committed))
          .catch((error: unknown) => logger.log("error", "write listener failed", { requestId: c.get("requestId"), error: loggableError(error) }));
      }
    }
  };
}

/** The listener that calls `start(c)` (which starts a dispatch run) when `interest` says a subscription may want a committed event. */
export function nudgeDispatcher(interest: SubscribedTypes, start: (c: Context<AppEnv>) => void): WriteListener {
  return (c, committed) => {
    if (interest.mayWant(committed.map((event) => event.type))) start(c);
  };
}
