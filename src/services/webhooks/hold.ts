/** Claims that end soon after their holder stops (docs/webhooks.md#design): a claim or a range lasts `CLAIM_MS`, and its holder extends it while it works. */
import { and, eq, sql } from "drizzle-orm";
import { qb, type Database } from "../../db/client";
import { params, plan, type PlanRun, runEach, withValues } from "../../db/plan";
import { webhookDispatch, webhooks } from "../../db/schema";

/** How long a claim or a range lasts past its taking or its last extension, ms; its holder extends it every half of this (a write up to that late keeps it). */
export const CLAIM_MS = 2_000;

/** Who holds claims and ranges: `token()` names this holder; `exited(token)` is the start of the tokens of `token`'s holder once it is known to have exited. */
export interface Holders {
  token(): string;
  exited(token: string): string | undefined;
}

/** Holders known only by their leases (Workers, other machines): random tokens, none known to have exited. */
export const leaseHolders: Holders = { token: () => crypto.randomUUID(), exited: () => undefined };

/** The end of a claim or a range taken or extended at `at`, ISO 8601. */
export const claimEnd = (at: Date): string => new Date(at.getTime() + CLAIM_MS).toISOString();

const p = params<{ id: number; token: string; until: string }>();
/** Subscription `id`'s claim by `token`, extended to `until` (nothing when the claim is gone). */
const extendClaim = plan({
  subscription: p.statement(
    qb
      .update(webhooks)
      .set({ dueAt: sql`${p("until")}` })
      .where(and(eq(webhooks.id, p("id")), eq(webhooks.leaseToken, p("token")))),
  ),
});
/** The range held by `token`, extended to `until`. */
const r = params<{ token: string; until: string }>();
const extendRange = plan({
  frontier: r.statement(
    qb
      .update(webhookDispatch)
      .set({ leaseUntil: sql`${r("until")}` })
      .where(and(eq(webhookDispatch.id, 1), eq(webhookDispatch.leaseToken, r("token")))),
  ),
});

/** What a holder holds: subscription `id`'s claim, or (no `id`) the range, by `token`. */
export type Held = { id?: number; token: string };

/** Keep `held` while `work` runs, extended every `CLAIM_MS / 2` (a failed extension ends it): its result. @throws its error. */
export async function holding<T>(db: Database, held: Held, now: () => Date, work: () => Promise<T>): Promise<T> {
  const extend = (): PlanRun =>
    held.id === undefined
      ? withValues(extendRange, { token: held.token, until: claimEnd(now()) })
      : withValues(extendClaim, { id: held.id, token: held.token, until: claimEnd(now()) });
  const timer = setInterval(() => void runEach(db, [extend()]).catch(() => undefined), CLAIM_MS / 2);
  (timer as { unref?: () => void }).unref?.();
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}
