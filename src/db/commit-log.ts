/**
 * The changes a request committed, as the outbox events its write batches
 * inserted (API.md §6: every change writes its event in the same batch, and
 * only when the change happened — the event inserts are guarded by the same
 * conditions as the change). So the events a batch returns are exactly the
 * rows it changed, which is what cache purges are derived from (API.md §7).
 *
 * Scoped per request with AsyncLocalStorage (node:async_hooks; on Workers
 * through `nodejs_compat`): `withCommitLog(fn)` runs `fn` with a fresh log,
 * and the outbox steps of a plan (src/db/plan.ts `run`) append to the log of
 * the request they run in. No state is shared between requests.
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
