/** The event types some subscription wants, as this process last learned it (unknown: wanted), so that unwanted writes start no dispatch run. */

/** A snapshot point: taken before the subscriptions are read, so a change during the read makes the result stale. */
export interface InterestMark {
  at: number;
  changes: number;
}

interface Known extends InterestMark {
  /** True when a subscription wants every type (`["*"]`). */
  all: boolean;
  types: ReadonlySet<string>;
}

/** Knowledge of the event types the subscriptions of one database want. */
export class SubscribedTypes {
  private known: Known | undefined;
  /** Subscriptions created, changed or deleted through this process (or isolate) so far. */
  private changes = 0;

  /** @param maxAgeMs knowledge older than this is unknown, ms (default: the cron's period). @param clock ms since the epoch (tests inject it). */
  constructor(
    private readonly maxAgeMs = 60_000,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Take a mark before reading the subscriptions (pass it to `learn`). */
  mark(): InterestMark {
    return { at: this.clock(), changes: this.changes };
  }

  /** Forget what is known: a subscription was created, changed or deleted here (the next run learns again). */
  invalidate(): void {
    this.changes += 1;
  }

  /** Learn the `events` lists (JSON text, as stored) of every subscription, read after `mark`. */
  learn(mark: InterestMark, eventLists: readonly string[]): void {
    const types = new Set<string>();
    for (const list of eventLists) for (const type of JSON.parse(list) as string[]) types.add(type);
    this.known = { ...mark, all: types.has("*"), types };
  }

  /** True when nothing current is known: the next dispatch run should learn (`learn`). */
  stale(): boolean {
    const known = this.known;
    return !known || known.changes !== this.changes || this.clock() - known.at > this.maxAgeMs;
  }

  /** True unless the knowledge is current and no subscription wants any of `types` (committed event types). */
  mayWant(types: Iterable<string>): boolean {
    const list = [...types];
    if (list.length === 0) return false;
    if (this.stale()) return true;
    const known = this.known!;
    return known.all || list.some((type) => known.types.has(type));
  }
}
