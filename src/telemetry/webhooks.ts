/** Webhook signals per subscription (docs/operations.md#metrics): attempts by outcome, counted by the instance a runtime passes to its dispatch runs. */

/** One subscription's attempts by outcome (`failed`: every failed attempt, the last one of a give-up too). */
export interface SubscriptionOutcome {
  delivered: number;
  failed: number;
  givenUp: number;
}

/** `a` and `b` added up (`a` absent: nothing yet). */
export function addOutcome(a: SubscriptionOutcome | undefined, b: SubscriptionOutcome): SubscriptionOutcome {
  return { delivered: (a?.delivered ?? 0) + b.delivered, failed: (a?.failed ?? 0) + b.failed, givenUp: (a?.givenUp ?? 0) + b.givenUp };
}

/** One subscription's backlog as the database holds it: whether it is `enabled`, the events after its place that it wants (when counted), the age of the oldest (s). */
export interface SubscriptionBacklog {
  id: number;
  enabled: boolean;
  backlog?: number;
  oldestAgeSeconds: number;
}

/** One subscription's signals: its backlog, and the attempts this process made since it started. */
export type SubscriptionSignals = SubscriptionOutcome & SubscriptionBacklog;

/** Attempts by subscription, counted in one process or isolate (an instance each, passed in). */
export class WebhookSignals {
  private readonly attempts = new Map<number, SubscriptionOutcome>();

  /** Add a turn's attempts by subscription id. */
  record(outcomes: Readonly<Record<number, SubscriptionOutcome>>): void {
    for (const [id, outcome] of Object.entries(outcomes)) this.attempts.set(Number(id), addOutcome(this.attempts.get(Number(id)), outcome));
  }

  /** The signals of each subscription in `backlogs` (every one that exists), in their order; the counts of the others are forgotten. */
  signals(backlogs: readonly SubscriptionBacklog[]): SubscriptionSignals[] {
    const existing = new Set(backlogs.map((b) => b.id));
    for (const id of this.attempts.keys()) if (!existing.has(id)) this.attempts.delete(id);
    return backlogs.map((b) => ({ ...b, ...(this.attempts.get(b.id) ?? { delivered: 0, failed: 0, givenUp: 0 }) }));
  }
}
