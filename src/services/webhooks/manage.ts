/** Changing a subscription (docs/webhooks.md#managing-a-subscription): a Merge Patch of it, or its signing secret, each one write batch. */
import { and, eq, sql } from "drizzle-orm";
import { qb, type Database } from "../../db/client";
import { params, plan, read, run, statement } from "../../db/plan";
import { events as eventLog, webhookDispatch, webhookEventTypes, webhooks } from "../../db/schema";
import { InvalidInput, NotFound } from "../../domain/errors";
import { type DeliveryMode, historyAfterChange, storedInterest, type Webhook, type WebhookChange } from "../../domain/webhooks";
import { generateWebhookSecret, isWebhookSecret } from "./signing";
import { webhookTargetProblem } from "../../domain/webhook-target";
import { placeholders } from "../../db/placeholders";
import { toWebhook, WEBHOOK } from "./subscriptions";
import { ROTATION_OVERLAP_MS, rotatedSecrets } from "./secrets";

const byId = params<{ id: number }>();
/** The subscription as a change needs it, and the newest and oldest event ids, in one snapshot. */
const current = plan({
  subscription: byId.statement(
    qb
      .select({ ...WEBHOOK, typesSince: webhooks.typesSince, previousEvents: webhooks.previousEvents, pausedAfter: webhooks.pausedAfter })
      .from(webhooks)
      .where(eq(webhooks.id, byId("id"))),
  ),
  log: statement(
    params<Record<never, never>>().prepare(
      qb
        .select({
          newest: sql<number>`coalesce((SELECT max(${eventLog.id}) FROM ${eventLog}), 0)`,
          oldest: sql<number>`coalesce((SELECT min(${eventLog.id}) FROM ${eventLog}), 0)`,
        })
        .from(sql`(SELECT 1)`),
    ),
  ),
});

/** A change, guarded by the state it was computed from (`was*`): a concurrent change makes it write nothing, and it is computed again. */
type ChangeValues = DeliveryMode & {
  id: number;
  url: string;
  events: string;
  enabled: boolean;
  typesSince: number;
  previousEvents: string | null;
  wasEvents: string;
  wasEnabled: boolean;
  retype: boolean;
  resume: boolean;
};
const c = params<ChangeValues>();
/** Where the subscription's place waits while it is parked (read before the change forgets it). */
const parkedAt = sql`(SELECT ${webhooks.pausedAfter} FROM ${webhooks} WHERE ${webhooks.id} = ${c("id")})`;
const changing = plan({
  // A resumed subscription a round parked rejoins the queue at its place; a re-typed one not queued joins at the state's event id, with `verify`.
  queue: c.statement(
    qb
      .update(webhookDispatch)
      .set({
        queue: sql`json_patch(${webhookDispatch.queue}, json_object(CAST(CAST(${c("id")} AS INTEGER) AS TEXT), CASE WHEN ${c("resume")} AND ${parkedAt} IS NOT NULL THEN json_object('after', ${parkedAt}) ELSE json_object('after', ${webhookDispatch.eventId}, 'verify', json('true')) END))`,
      })
      .where(
        and(
          eq(webhookDispatch.id, 1),
          sql`EXISTS (SELECT 1 FROM ${webhooks} WHERE ${webhooks.id} = ${c("id")} AND ${webhooks.events} = ${c("wasEvents")} AND ${webhooks.enabled} = ${c("wasEnabled")} AND (
            (${c("resume")} AND ${webhooks.pausedAfter} IS NOT NULL)
            OR (${c("retype")} AND ${webhooks.pausedAfter} IS NULL AND ${webhookDispatch.eventId} < ${c("typesSince")}
              AND json_type(${webhookDispatch.queue}, '$."' || CAST(CAST(${c("id")} AS INTEGER) AS TEXT) || '"') IS NULL)))`,
        ),
      ),
  ),
  subscription: c.statement(
    qb
      .update(webhooks)
      .set({
        ...placeholders(c, ["url", "events", "enabled", "ordering", "maxInFlight", "rateLimit"]),
        typesSince: sql`CASE WHEN ${c("retype")} THEN ${c("typesSince")} ELSE ${webhooks.typesSince} END`,
        previousEvents: sql`CASE WHEN ${c("retype")} THEN ${c("previousEvents")} ELSE ${webhooks.previousEvents} END`,
        status: sql`CASE WHEN ${c("resume")} THEN 'active' ELSE ${webhooks.status} END`,
        pausedAfter: sql`CASE WHEN ${c("resume")} THEN NULL ELSE ${webhooks.pausedAfter} END`,
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
export async function updateWebhook(db: Database, id: number, change: WebhookChange, options: { allowPrivateTargets: boolean }): Promise<Webhook> {
  if (change.url !== undefined) {
    const problem = webhookTargetProblem(change.url, { allowPrivate: options.allowPrivateTargets });
    if (problem) throw new InvalidInput("url", problem);
  }
  for (;;) {
    const { subscription, log } = await read(db, current, { id });
    const [was] = subscription;
    if (!was) throw new NotFound("webhook", id);
    const { newest, oldest } = log[0] ?? { newest: 0, oldest: 0 };
    const wasTypes = JSON.parse(was.events) as string[];
    const types = change.events === undefined ? wasTypes : [...new Set(change.events)];
    const retype = JSON.stringify([...types].sort()) !== JSON.stringify([...wasTypes].sort());
    const url = change.url === undefined ? was.url : new URL(change.url).href;
    const enabled = change.enabled ?? Boolean(was.enabled);
    const resume = change.enabled === true && (!was.enabled || was.status === "failing" || was.pausedAfter !== null);
    const mode: DeliveryMode = {
      ordering: change.ordering ?? was.ordering,
      maxInFlight: change.maxInFlight ?? was.maxInFlight,
      rateLimit: change.rateLimit === undefined ? was.rateLimit : change.rateLimit,
    };
    const remode = mode.ordering !== was.ordering || mode.maxInFlight !== was.maxInFlight || mode.rateLimit !== was.rateLimit;
    if (!retype && !remode && url === was.url && enabled === Boolean(was.enabled) && !resume) return toWebhook(was);
    const history = retype ? historyAfterChange(storedInterest({ ...was, start: 0 }), newest, oldest) : null;
    const values: ChangeValues = {
      ...mode,
      id,
      url,
      events: retype ? JSON.stringify(types) : was.events,
      enabled,
      typesSince: retype ? newest : 0,
      previousEvents: history === null ? was.previousEvents : JSON.stringify(history),
      wasEvents: was.events,
      wasEnabled: Boolean(was.enabled),
      retype,
      resume,
    };
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
