/** Webhook signals per subscription (docs/operations.md#metrics): attempts by outcome, counted by the instance a runtime passes to its dispatch runs. */

/** One subscription's attempts by outcome (`failed`: every failed attempt, the last one of a give-up too). */
export interface SubscriptionOutcome {
  delivered: number;
  failed: number;
  givenUp: number;
}

/** One subscription's backlog as the database holds it: the events after its place that it wants, and the age of the oldest (s). */
export interface SubscriptionBacklog {
  id: number;
  backlog: number;
  oldestAgeSeconds: number;
}

/** One subscription's signals: its backlog, and the attempts this process made since it started. */
export type SubscriptionSignals = SubscriptionOutcome & SubscriptionBacklog;

/** Attempts by subscription, counted in one process or isolate (an instance each, passed in). */
export class WebhookSignals {
  private readonly attempts = new Map<number, SubscriptionOutcome>();

  /** Add a turn's attempts by subscription id. */
  record(outcomes: Readonly<Record<number, SubscriptionOutcome>>): void {
    for (const [id, { delivered, failed, givenUp }] of Object.entries(outcomes)) {
      const one = this.attempts.get(Number(id)) ?? { delivered: 0, failed: 0, givenUp: 0 };
      this.attempts.set(Number(id), { delivered: one.delivered + delivered, failed: one.failed + failed, givenUp: one.givenUp + givenUp });
    }
  }

  /** The signals of each subscription in `backlogs` (every one that exists), in their order; the counts of the others are forgotten. */
  signals(backlogs: readonly SubscriptionBacklog[]): SubscriptionSignals[] {
    const existing = new Set(backlogs.map((b) => b.id));
    for (const id of this.attempts.keys()) if (!existing.has(id)) this.attempts.delete(id);
    return backlogs.map((b) => ({ ...b, ...(this.attempts.get(b.id) ?? { delivered: 0, failed: 0, givenUp: 0 }) }));
  }
}
