/** A claimed subscription's turn (docs/webhooks.md#design): read what is due, send it, record the outcomes with the claim's release, one batch. */
import type { Database } from "../../db/client";
import { plan, type PlanRun, read, runEach, statement, withValues } from "../../db/plan";
import { storedInterest, wants } from "../../domain/webhooks";
import { CHAIN, eventMessage, type Link, type EventRow, type Planned, type Redelivery, redeliveryMessage, type SendOptions, sendChain, settle } from "./chain";
import { TURN_MS, WINDOW, type TurnReport } from "./chain";
import { type Claimed, dueRedeliveries, eventSpan, release } from "./claims";
import { dropRedelivery } from "./outcomes";

/** How soon a subscription re-typed ahead of the reach looks again, ms. */
export const RECHECK_MS = 1_000;

/** A turn's reads, one snapshot: the events after the place (none when the stream is not due) and the redeliveries due. */
const turnReads = plan({ window: statement(eventSpan), redeliveries: statement(dueRedeliveries) });

/** What a turn needs beside sending: its claim (`token`, taken at `claimedAt`). */
export type TurnOptions = SendOptions & { token: string; claimedAt: Date };

/** A turn's stream: the events after `from` up to `upTo`; `keepPlace`: it sends none (claimed at NULL), a place set meanwhile stays. */
export interface Bounds {
  from: number;
  upTo: number;
  keepPlace: boolean;
}

/** A claimed subscription's bounds at `now`: from its place to the reach, if its stream is due; none when it is at NULL. */
export function claimBounds(s: Claimed, now: string): Bounds {
  if (s.place === null) return { from: s.reach, upTo: s.reach, keepPlace: true };
  const streamDue = s.attempts === 0 || (s.retryAt !== null && s.retryAt <= now);
  return { from: s.place, upTo: streamDue ? Math.max(s.place, s.reach) : s.place, keepPlace: false };
}

/** A turn sent, not yet recorded: its counts, its writes, what its release sets, and whether it is `clean` (see `Release`). */
export interface Played {
  report: TurnReport;
  writes: PlanRun[];
  release: ReturnType<typeof settle>["release"] & { keepPlace: boolean; clean: boolean };
}

/** Read what is due to `s` within `bounds` and send it: what to record (never writes); `shared`: a range's window, read once. @throws the driver's error. */
export async function playTurn(db: Database, s: Claimed, bounds: Bounds, options: TurnOptions, shared?: Promise<EventRow[]>): Promise<Played> {
  const { from, upTo, keepPlace } = bounds;
  const now = options.claimedAt.toISOString();
  const { window, redeliveries } =
    shared && (s.dueAt === null || s.dueAt > now)
      ? { window: await shared, redeliveries: [] }
      : await read(db, turnReads, { from, upTo, limit: WINDOW, webhookId: s.id, now, count: CHAIN });
  const drops: PlanRun[] = [];
  const planned = planTurn(s, window, redeliveries, drops, window.length < WINDOW ? upTo : window.at(-1)!.id);
  const sent = await sendChain(s, planned.chain, options.claimedAt.getTime() + TURN_MS, options);
  const { writes, release, report } = settle(planned, sent, options);
  const streamOnly = redeliveries.length === 0 && sent.length === planned.chain.length && report.delivered === sent.length;
  const clean = streamOnly && release.place >= upTo && release.attempts === 0 && release.status === null && s.failingSince === null;
  return { report, writes: [...drops, ...writes], release: { ...release, keepPlace, clean } };
}

/** The write that releases `played`'s subscription, claimed by `token` (`member`: its share of the range `token` holds). */
export function releasing(played: Played, token: string, member: boolean, options: Pick<SendOptions, "config" | "now">): PlanRun {
  const at = options.now();
  const hoursMs = options.config.webhooks.disableAfterHours * 3_600_000;
  const times = {
    now: at.toISOString(),
    recheckAt: new Date(at.getTime() + RECHECK_MS).toISOString(),
    disableBefore: new Date(at.getTime() - hoursMs).toISOString(),
  };
  return withValues(release, { ...played.release, ...times, token, member });
}

/** Send what is due to claimed subscription `s` and record it, releasing the claim: the counts. @throws the driver's error. */
export async function takeTurn(db: Database, s: Claimed, options: TurnOptions): Promise<TurnReport> {
  const played = await playTurn(db, s, claimBounds(s, options.claimedAt.toISOString()), options);
  await runEach(db, [...played.writes, releasing(played, options.token, false, options)]);
  return played.report;
}

/** The turn's messages: the redeliveries (those whose event retention removed are dropped), then the wanted events of the window, which reached `scanned`. */
function planTurn(s: Claimed, window: EventRow[], redeliveries: Redelivery[], drops: PlanRun[], scanned: number): Planned {
  const chain: Link[] = [];
  for (const x of redeliveries) {
    const message = redeliveryMessage(x);
    if (message) chain.push({ message, redelivery: x });
    else drops.push(withValues(dropRedelivery, { id: x.id }));
  }
  const interest = storedInterest({ ...s, start: s.lastEventId });
  for (const e of window) if (wants(interest, e)) chain.push({ message: eventMessage(e), event: e });
  return { s, chain, scanned };
}
