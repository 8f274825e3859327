/** A claimed subscription's turn (docs/webhooks.md#design): read what is due, send it, record the outcomes with the claim's release, one batch. */
import type { Database } from "../../db/client";
import { plan, type PlanRun, read, runEach, statement, withValues } from "../../db/plan";
import { storedInterest, wants } from "../../domain/webhooks";
import {
  CHAIN,
  eventMessage,
  type Link,
  type EventRow,
  type Planned,
  type Redelivery,
  redeliveryMessage,
  type SendOptions,
  sendChain,
  settle,
  TURN_MS,
  type TurnReport,
} from "./chain";
import { type Claimed, dueRedeliveries, eventSpan, release } from "./claims";
import { dropRedelivery } from "./outcomes";

/** Events a turn reads after its subscription's place. */
const WINDOW = 100;

/** A turn's reads, one snapshot: the events after the place (none when the stream is not due) and the redeliveries due. */
const turnReads = plan({ window: statement(eventSpan), redeliveries: statement(dueRedeliveries) });

/** What a turn needs beside sending: its claim (`token`, taken at `claimedAt`). */
export type TurnOptions = SendOptions & { token: string; claimedAt: Date };

/** Send what is due to claimed subscription `s` and record it, releasing the claim: the counts. @throws the driver's error. */
export async function takeTurn(db: Database, s: Claimed, options: TurnOptions): Promise<TurnReport> {
  const now = options.claimedAt.toISOString();
  const streamDue = s.attempts === 0 || (s.retryAt !== null && s.retryAt <= now);
  const from = s.place ?? s.frontier;
  const upTo = streamDue ? Math.max(from, s.frontier) : from;
  const { window, redeliveries } = await read(db, turnReads, { from, upTo, limit: WINDOW, webhookId: s.id, now, count: CHAIN });
  const drops: PlanRun[] = [];
  const planned = planTurn(s, window, redeliveries, drops, window.length < WINDOW ? upTo : window.at(-1)!.id);
  const sent = await sendChain(s, planned.chain, options.claimedAt.getTime() + TURN_MS, options);
  const settled = settle(planned, sent, options);
  const at = options.now();
  const disableBefore = new Date(at.getTime() - options.config.webhooks.disableAfterHours * 3_600_000).toISOString();
  const releasing = withValues(release, { ...settled.release, token: options.token, now: at.toISOString(), disableBefore });
  await runEach(db, [...drops, ...settled.writes, releasing]);
  return settled.report;
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
