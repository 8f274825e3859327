/** Changing a subscription (docs/webhooks.md#managing-a-subscription): a Merge Patch of it, or its signing secret, each one write batch. */
import { and, eq, sql } from "drizzle-orm";
import { qb, type Database } from "../../db/client";
import { params, plan, read, run, statement } from "../../db/plan";
import { events as eventLog, webhookEventTypes, webhooks } from "../../db/schema";
import { InvalidInput, NotFound } from "../../domain/errors";
import { type DeliveryMode, historyBeforeChange, storedInterest, type Webhook, type WebhookChange } from "../../domain/webhooks";
import { generateWebhookSecret, isWebhookSecret } from "./signing";
import { webhookTargetProblem } from "../../domain/webhook-target";
import { placeholders } from "../../db/placeholders";
import { toWebhook, WEBHOOK } from "./subscriptions";
import { frontier, heldRangeUntil, liveMember, member, newestEvent, rangeToken, reach } from "./frontier";
import { ROTATION_OVERLAP_MS, rotatedSecrets } from "./secrets";

const byId = params<{ id: number }>();
/** The subscription as a change needs it, and the oldest event id, in one snapshot. */
const current = plan({
  subscription: byId.statement(
    qb
      .select({ ...WEBHOOK, typesSince: webhooks.typesSince, previousEvents: webhooks.previousEvents })
      .from(webhooks)
      .where(eq(webhooks.id, byId("id"))),
  ),
  log: statement(
    params<Record<never, never>>().prepare(
      qb.select({ oldest: sql<number>`coalesce((SELECT min(${eventLog.id}) FROM ${eventLog}), 0)` }).from(sql`(SELECT 1)`),
    ),
  ),
});

/** A change, guarded by the state it was computed from (`was*`): a concurrent change makes it write nothing, and it is computed again. */
type ChangeValues = DeliveryMode & {
  id: number;
  url: string;
  events: string;
  enabled: boolean;
  /** The kept type history (JSON, `historyBeforeChange`) when `retype`. */
  history: string | null;
  wasEvents: string;
  wasEnabled: boolean;
  retype: boolean;
  resume: boolean;
  now: string;
};
const c = params<ChangeValues>();
/** The history plus the interval this change ends (up to the newest event, read in the change's batch), unless no event committed since the last change. */
const appended = sql`CASE WHEN json_extract(${c("history")}, '$[#-1].upTo') = ${newestEvent} THEN ${c("history")}
  ELSE json_insert(${c("history")}, '$[#]', json_object('upTo', ${newestEvent}, 'events', json(${webhooks.events}))) END`;
/** A re-type of a live range's member: it becomes the range's own claim, at the range's start (the range's close records it). */
const memberRetyped = sql`(${c("retype")} AND ${liveMember(sql`${c("now")}`)})`;
/** Its next due time: a claim keeps its own; paused, never; resumed or re-typed, now (a re-type makes it read the log itself from its place). */
const dueAfter = sql`CASE WHEN ${memberRetyped} THEN ${heldRangeUntil} WHEN ${webhooks.leaseToken} IS NOT NULL THEN ${webhooks.dueAt}
  WHEN NOT ${c("enabled")} THEN NULL WHEN ${c("resume")} THEN ${c("now")} WHEN ${c("retype")} THEN coalesce(${webhooks.dueAt}, ${c("now")})
  ELSE ${webhooks.dueAt} END`;
/** A re-typed subscription reads the log itself: from its place, from the frontier (a range's member) or from the reach (done up to it). */
const placeAfter = sql`CASE WHEN NOT ${c("retype")} THEN ${webhooks.place} WHEN ${member} THEN ${frontier}
  ELSE coalesce(${webhooks.place}, ${reach}) END`;
const changing = plan({
  subscription: c.statement(
    qb
      .update(webhooks)
      .set({
        ...placeholders(c, ["url", "events", "enabled", "ordering", "maxInFlight", "rateLimit"]),
        typesSince: sql`CASE WHEN ${c("retype")} THEN ${newestEvent} ELSE ${webhooks.typesSince} END`,
        previousEvents: sql`CASE WHEN ${c("retype")} THEN ${appended} ELSE ${webhooks.previousEvents} END`,
        place: placeAfter,
        dueAt: dueAfter,
        leaseToken: sql`CASE WHEN ${memberRetyped} THEN ${rangeToken} ELSE ${webhooks.leaseToken} END`,
        status: sql`CASE WHEN ${c("resume")} THEN 'active' ELSE ${webhooks.status} END`,
        failingSince: sql`CASE WHEN ${c("resume")} THEN NULL ELSE ${webhooks.failingSince} END`,
      })
      .where(and(eq(webhooks.id, c("id")), eq(webhooks.events, c("wasEvents")), eq(webhooks.enabled, c("wasEnabled"))))
      .returning(WEBHOOK),
  ),
  oldTypes: c.guarded((changed) => qb.delete(webhookEventTypes).where(and(eq(webhookEventTypes.webhookId, c("id")), sql`${c("retype")}`, changed))),
  newTypes: c.statement(
    qb.insert(webhookEventTypes).select(
      qb
        .select({ type: sql<string>`value`.as("type"), webhookId: sql<number>`${c("id")}`.as("webhook_id") })
        .from(sql`json_each(${c("events")})`)
        .where(
          sql`${c("retype")} AND EXISTS (SELECT 1 FROM ${webhooks} WHERE ${webhooks.id} = ${c("id")} AND ${webhooks.events} = ${c("events")}) AND NOT EXISTS (SELECT 1 FROM ${webhookEventTypes} WHERE ${webhookEventTypes.webhookId} = ${c("id")} AND ${webhookEventTypes.type} = value)`,
        ),
    ),
  ),
});

/** Apply `change` to subscription `id` (new types apply to later events): the subscription after it. @throws NotFound, InvalidInput (`url`). */
export async function updateWebhook(db: Database, id: number, change: WebhookChange, options: { allowPrivateTargets: boolean; now: Date }): Promise<Webhook> {
  if (change.url !== undefined) {
    const problem = webhookTargetProblem(change.url, { allowPrivate: options.allowPrivateTargets });
    if (problem) throw new InvalidInput("url", problem);
  }
  for (;;) {
    const { subscription, log } = await read(db, current, { id });
    const [was] = subscription;
    if (!was) throw new NotFound("webhook", id);
    const { oldest } = log[0] ?? { oldest: 0 };
    const wasTypes = JSON.parse(was.events) as string[];
    const types = change.events === undefined ? wasTypes : [...new Set(change.events)];
    const retype = JSON.stringify([...types].sort()) !== JSON.stringify([...wasTypes].sort());
    const url = change.url === undefined ? was.url : new URL(change.url).href;
    const enabled = change.enabled ?? Boolean(was.enabled);
    const resume = change.enabled === true && (!was.enabled || was.status !== "active");
    const mode: DeliveryMode = {
      ordering: change.ordering ?? was.ordering,
      maxInFlight: change.maxInFlight ?? was.maxInFlight,
      rateLimit: change.rateLimit === undefined ? was.rateLimit : change.rateLimit,
    };
    const remode = mode.ordering !== was.ordering || mode.maxInFlight !== was.maxInFlight || mode.rateLimit !== was.rateLimit;
    if (!retype && !remode && url === was.url && enabled === Boolean(was.enabled) && !resume) return toWebhook(was);
    const history = retype ? JSON.stringify(historyBeforeChange(storedInterest({ ...was, start: 0 }), oldest)) : null;
    const events = retype ? JSON.stringify(types) : was.events;
    const guard = { wasEvents: was.events, wasEnabled: Boolean(was.enabled) };
    const values: ChangeValues = { ...mode, ...guard, id, url, events, enabled, history, retype, resume, now: options.now.toISOString() };
    const [row] = (await run(db, changing, values)).subscription;
    if (row) return toWebhook(row);
  }
}

const r = params<{ id: number; secret: string; until: string; now: string }>();
/** The secret replaced by `secret` unless it is already so; the one it replaces signs until `until` (see ./secrets.ts). */
const rotating = plan({
  subscription: r.statement(
    qb
      .update(webhooks)
      .set({ previousSecret: rotatedSecrets(sql`${r("until")}`, sql`${r("now")}`), previousSecretUntil: sql`${r("until")}`, secret: sql`${r("secret")}` })
      .where(and(eq(webhooks.id, r("id")), sql`${webhooks.secret} <> ${r("secret")}`))
      .returning(WEBHOOK),
  ),
  unchanged: r.statement(
    qb
      .select(WEBHOOK)
      .from(webhooks)
      .where(and(eq(webhooks.id, r("id")), eq(webhooks.secret, r("secret")))),
  ),
});

/** Rotate subscription `id`'s secret to `given` or a new one; the old one signs for `ROTATION_OVERLAP_MS` more. @throws NotFound, InvalidInput. */
export async function rotateWebhookSecret(db: Database, id: number, given: string | undefined, now: Date): Promise<{ webhook: Webhook; secret: string }> {
  if (given !== undefined && !isWebhookSecret(given)) throw new InvalidInput("secret", "Must be whsec_ followed by the base64 of 24 to 64 bytes.");
  const secret = given ?? generateWebhookSecret();
  const until = new Date(now.getTime() + ROTATION_OVERLAP_MS).toISOString();
  const { subscription, unchanged } = await run(db, rotating, { id, secret, until, now: now.toISOString() });
  const row = subscription[0] ?? unchanged[0];
  if (!row) throw new NotFound("webhook", id);
  return { webhook: toWebhook(row), secret };
}
