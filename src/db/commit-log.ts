/**
 * The changes a request committed, as the outbox events its write batches
 * inserted (docs/api.md#events-and-webhooks); an event is inserted only when its change happened,
 * so cache purges are derived from these (docs/api.md#caching). Scoped per request with
 * AsyncLocalStorage (on Workers through `nodejs_compat`): `withCommitLog(fn)`
 * gives `fn` a fresh log, and a plan's outbox steps append to it.
 */
import { AsyncLocalStorage } from "node:async_hooks";

/** One committed outbox event: its type and its data (the resource after the change). */
export interface CommittedEvent {
  type: string;
  data: Record<string, unknown>;
}

const current = new AsyncLocalStorage<CommittedEvent[]>();

/**
 * Run `fn` with a fresh commit log.
 * @returns what `fn` returned and the events committed while it ran, in commit order
 *   (also when `fn` threw: then `error` is set and `result` is undefined).
 */
export async function withCommitLog<T>(fn: () => Promise<T>): Promise<{ result?: T; error?: unknown; events: CommittedEvent[] }> {
  const events: CommittedEvent[] = [];
  try {
    const result = await current.run(events, fn);
    return { result, events };
  } catch (error) {
    return { error, events };
  }
}

/** True when the running request keeps a commit log (callers skip building events otherwise). */
export function isRecordingCommits(): boolean {
  return current.getStore() !== undefined;
}

/** Append committed events to the log of the running request (no-op outside `withCommitLog`). */
export function recordCommitted(events: CommittedEvent[]): void {
  if (events.length > 0) current.getStore()?.push(...events);
}
