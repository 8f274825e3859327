/** A range of the log sent to the subscriptions at the frontier (docs/webhooks.md#design): one write batch closes it with its members' entries. */
import type { Database } from "../../db/client";
import { type PlanRun, runEach, withValues } from "../../db/plan";
import type { Claimed } from "./claims";
import { closeRange, detach } from "./frontier";
import { claimEnd, holding } from "./hold";
import { type Played, releasing, type TurnOptions } from "./turn";

/** How long a range waits for its members before those still sending go on under claims of their own, ms: new events wait at most this long. */
export const RANGE_MS = 250;

/** A run's hold on the frontier: events (`from`, `upTo`] for its `members`, held by `token` from `claimedAt`. */
export interface Range {
  from: number;
  upTo: number;
  token: string;
  claimedAt: Date;
  members: Claimed[];
}

/** A range's close, one batch once every member played or `RANGE_MS` after it began: entries, a claim for each member still sending, the frontier moved. */
export class RangeClose {
  private readonly played = new Map<number, Played>();
  private closed: Promise<void> | undefined;
  private readonly timer: ReturnType<typeof setTimeout>;
  private started = () => {};
  private readonly closing = new Promise<void>((resolve) => (this.started = resolve));

  constructor(
    private readonly db: Database,
    private readonly range: Range,
    private readonly options: TurnOptions,
    waitMs = RANGE_MS,
  ) {
    this.timer = setTimeout(() => void this.close().catch(() => undefined), waitMs);
    // Kept while the close is late (a slow database): the range's lease is short.
    void holding(db, { token: range.token }, options.now, () => this.closing.then(() => this.closed)).catch(() => undefined);
    (this.timer as { unref?: () => void }).unref?.();
  }

  /** Record member `s`'s `played` turn: in the close, or after it under its own claim. Resolves when it is written. @throws the driver's error. */
  async finish(s: Claimed, played: Played): Promise<void> {
    if (this.closed) {
      await this.closed;
      await runEach(this.db, [...played.writes, releasing(played, this.range.token, false, this.options)]);
      return;
    }
    this.played.set(s.id, played);
    await (this.played.size === this.range.members.length ? this.close() : this.whenClosed());
  }

  /** Resolves when the close is written (it starts `RANGE_MS` after the range at the latest). */
  private async whenClosed(): Promise<void> {
    await this.closing;
    await this.closed;
  }

  /** Write the close once. @throws the driver's error. */
  private close(): Promise<void> {
    this.closed ??= (async () => {
      clearTimeout(this.timer);
      this.started();
      const { token, from } = this.range;
      const until = claimEnd(this.options.now());
      const writes: PlanRun[] = [];
      for (const played of this.played.values()) writes.push(...played.writes, releasing(played, token, true, this.options));
      for (const s of this.range.members) if (!this.played.has(s.id)) writes.push(withValues(detach, { id: s.id, token, from, until }));
      await runEach(this.db, [...writes, withValues(closeRange, { token })]);
    })();
    return this.closed;
  }
}
