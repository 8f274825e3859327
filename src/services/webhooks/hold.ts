/** Claims that end soon after their holder stops (docs/webhooks.md#design): a claim lasts `CLAIM_MS`, a range `RANGE_LEASE_MS`, and their holders extend them while they work. */
import { and, eq, sql } from "drizzle-orm";
import { qb, type Database } from "../../db/client";
import { params, plan, type PlanRun, runEach, withValues } from "../../db/plan";
import { webhookDispatch, webhooks } from "../../db/schema";

/** How long a claim lasts past its taking or its last extension, ms; its holder extends it every half of this. */
export const CLAIM_MS = 2_000;

/** How long a range lasts past its taking or its last extension, ms: it closes within `RANGE_MS` (250), so a dead holder's range holds new events briefly. */
export const RANGE_LEASE_MS = 500;

/** The end of a claim taken or extended at `at`, ISO 8601. */
export const claimEnd = (at: Date): string => new Date(at.getTime() + CLAIM_MS).toISOString();
/** The end of a range taken or extended at `at`, ISO 8601. */
export const rangeEnd = (at: Date): string => new Date(at.getTime() + RANGE_LEASE_MS).toISOString();

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

/** Keep `held` while `work` runs, extended every `CLAIM_MS / 2` (a range: `RANGE_LEASE_MS / 2.5`; a failed extension ends it): its result. @throws its error. */
export async function holding<T>(db: Database, held: Held, now: () => Date, work: () => Promise<T>): Promise<T> {
  const extend = (): PlanRun =>
    held.id === undefined
      ? withValues(extendRange, { token: held.token, until: rangeEnd(now()) })
      : withValues(extendClaim, { id: held.id, token: held.token, until: claimEnd(now()) });
  const every = held.id === undefined ? RANGE_LEASE_MS / 2.5 : CLAIM_MS / 2;
  const timer = setInterval(() => void runEach(db, [extend()]).catch(() => undefined), every);
  (timer as { unref?: () => void }).unref?.();
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}
