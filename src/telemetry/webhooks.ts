/** Webhook signals per subscription (docs/operations.md#metrics): what the dispatcher's polls and rounds found, read by a runtime. */

/** What the webhook dispatcher's last look at its queue found. */
export interface WebhookBacklog {
  /** Subscriptions waiting in the queue (behind, or retrying), each at its place: the event id up to which it is done. */
  places: Record<string, number>;
  /** The dispatch state's event id (the place of every subscription not in the queue) and the newest event's. */
  eventId: number;
  newest: number;
}

/** One subscription's attempts by outcome (`failed`: every failed attempt, the last one of a give-up too), and its oldest undelivered event. */
export interface SubscriptionOutcome {
  delivered: number;
  failed: number;
  givenUp: number;
  /** When the first event a round read for it and did not deliver occurred (RFC 3339); null: none left in what it read. */
  oldest?: string | null;
}

/** One subscription's signals: attempts since this process started, events after its place, age of its oldest undelivered event (s). */
export type SubscriptionSignals = Omit<SubscriptionOutcome, "oldest"> & { id: number; backlog: number; oldestAgeSeconds: number };

const subscriptions = new Map<number, Omit<SubscriptionOutcome, "oldest"> & { backlog: number; oldest: number | null }>();

const entry = (id: number) => subscriptions.get(id) ?? subscriptions.set(id, { delivered: 0, failed: 0, givenUp: 0, backlog: 0, oldest: null }).get(id)!;

/** Note what a poll found: each subscription's backlog is the events after its place. */
export function recordWebhookBacklog(seen: WebhookBacklog): void {
  for (const id of Object.keys(seen.places)) entry(Number(id));
  for (const [id, one] of subscriptions) {
    one.backlog = Math.max(0, seen.newest - (seen.places[id] ?? seen.eventId));
    if (one.backlog === 0) one.oldest = null;
  }
}

/** Add a round's attempts by subscription (ids: subscription ids). */
export function recordSubscriptionOutcomes(outcomes: Record<number, SubscriptionOutcome>): void {
  for (const [id, { delivered, failed, givenUp, oldest }] of Object.entries(outcomes)) {
    const one = entry(Number(id));
    one.delivered += delivered;
    one.failed += failed;
    one.givenUp += givenUp;
    if (oldest !== undefined) one.oldest = oldest === null ? null : Date.parse(oldest);
  }
}

/** Drop the signals of deleted subscriptions `ids`. */
export function forgetSubscriptions(ids: readonly number[]): void {
  for (const id of ids) subscriptions.delete(id);
}

/** Keep the signals of the subscriptions `ids` (every one that exists; a new one starts at 0) and drop the others'. */
export function keepSubscriptions(ids: readonly number[]): void {
  const kept = new Set(ids);
  for (const id of subscriptions.keys()) if (!kept.has(id)) subscriptions.delete(id);
  for (const id of ids) entry(id);
}

/** Each subscription's signals at `now` (ms since the epoch), in id order; `only`: those subscriptions. */
export function subscriptionSignals(now: number, only?: ReadonlySet<number>): SubscriptionSignals[] {
  return [...subscriptions]
    .filter(([id]) => !only || only.has(id))
    .sort(([a], [b]) => a - b)
    .map(([id, { oldest, ...one }]) => ({ id, ...one, oldestAgeSeconds: one.backlog > 0 && oldest !== null ? Math.max(0, now - oldest) / 1000 : 0 }));
}
