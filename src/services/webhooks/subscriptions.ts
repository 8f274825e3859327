/** Webhook subscriptions (docs/api.md#events-and-webhooks): create, list, get, delete. */
import { and, count, eq, gt, inArray, lt, notExists, type Placeholder, type SQL, sql } from "drizzle-orm";
import { selectById } from "../../db/by-id";
import { qb, type Database } from "../../db/client";
import { execute, guarded, type Params, params, plan, run, statement } from "../../db/plan";
import { events as eventLog, WEBHOOK as WEBHOOK_REPRESENTATION, webhookDeliveries, webhookEventTypes, webhooks } from "../../db/schema";
import type { RowOf } from "../../db/representation";
import { InvalidInput, LimitReached, NotFound } from "../../domain/errors";
import type { Creation, KeyClaim } from "../../domain/idempotency";
import { type DeliveryMode, type DeliveryStatus, MAX_IN_FLIGHT, type NewWebhook, type Webhook, type WebhookStatus } from "../../domain/webhooks";
import { webhookTargetProblem } from "../../domain/webhook-target";
import { claimStep, claimValues, keyRowStep, recordCreated, releaseStep, replayUnlessClaimed } from "../idempotency.service";
import { aliasedPlaceholders } from "../../db/placeholders";
import { generateWebhookSecret } from "./signing";

/** Most subscriptions that may exist at once by default (WEBHOOKS_MAX, docs/api.md#events-and-webhooks). */
export const MAX_WEBHOOKS = 500;

/** The columns of the Webhook representation. */
export const WEBHOOK = WEBHOOK_REPRESENTATION.columns;

const lastEventId = qb.select({ id: sql<number>`coalesce(max(${eventLog.id}), 0)` }).from(eventLog);

const subscriptionCount = qb
  .select({ n: count().as("n") })
  .from(webhooks)
  .as("subscriptions");

/** Creating a subscription: `events` is a JSON array; at most `max` subscriptions. */
const creating = params<{ url: string; events: string; secret: string; createdAt: string; max: number } & DeliveryMode>();
/** Inserts only while fewer than `max` subscriptions exist and `guard` (if any) holds: check and insert are one statement. */
function insertSubscription(guard?: SQL) {
  return creating.prepare(
    qb
      .insert(webhooks)
      .select(
        qb
          .select({
            id: sql<number>`NULL`.as("id"),
            ...aliasedPlaceholders(creating, ["url", "events", "secret"]),
            previousSecret: sql<null>`NULL`.as("previous_secret"),
            previousSecretUntil: sql<null>`NULL`.as("previous_secret_until"),
            status: sql<WebhookStatus>`'active'`.as("status"),
            enabled: sql<boolean>`1`.as("enabled"),
            createdAt: sql<string>`${creating("createdAt")}`.as("created_at"),
            lastEventId: sql<number>`${lastEventId}`.as("last_event_id"),
            typesSince: sql<number>`0`.as("types_since"),
            previousEvents: sql<null>`NULL`.as("previous_events"),
            place: sql<null>`NULL`.as("place"),
            attempts: sql<number>`0`.as("attempts"),
            retryAt: sql<null>`NULL`.as("retry_at"),
            dueAt: sql<null>`NULL`.as("due_at"),
            leaseToken: sql<null>`NULL`.as("lease_token"),
            failingSince: sql<null>`NULL`.as("failing_since"),
            ...aliasedPlaceholders(creating, ["ordering", "maxInFlight", "rateLimit"]),
          })
          .from(subscriptionCount)
          .where(and(lt(subscriptionCount.n, creating("max")), guard)),
      )
      .returning(WEBHOOK),
  );
}

/** A row per wanted event type of the subscription just inserted (the newest: the batch holds the write lock), when the step before changed a row. */
const eventTypes = creating.guarded((changed) =>
  qb.insert(webhookEventTypes).select(
    qb
      .select({ type: sql<string>`value`.as("type"), webhookId: sql<number>`(SELECT max(${webhooks.id}) FROM ${webhooks})`.as("webhook_id") })
      .from(sql`json_each(${creating("events")})`)
      .where(changed),
  ),
);

/** Creating a subscription: the subscription (see `insertSubscription`), then, only if it was inserted, its event types. */
const creation = plan({ subscription: statement(insertSubscription()), types: eventTypes });

/** Creating with an Idempotency-Key: the claim guards the insert, the response (200, no secret) is recorded with it, a refused subscription releases the claim. */
const keyedCreation = plan({
  claim: claimStep,
  subscription: guarded(insertSubscription),
  record: recordCreated(200, webhooks, WEBHOOK_REPRESENTATION.json({ events: sql`json(${webhooks.events})` }), sql`'/webhooks/' || ${webhooks.id}`),
  types: eventTypes,
  release: releaseStep,
  existing: keyRowStep,
});

const page = params<{ afterId: number; limit: number }>();
const listSubscriptions = page.prepare(
  qb
    .select(WEBHOOK)
    .from(webhooks)
    .where(gt(webhooks.id, page("afterId")))
    .orderBy(webhooks.id)
    .limit(page("limit")),
);

const subscriptionById = selectById(webhooks, WEBHOOK);

/** The step "subscription `webhookId` exists": one row when it does. */
export function subscriptionExists<V extends { webhookId: number }>(p: Params<V>) {
  return p.statement(
    qb
      .select({ id: webhooks.id })
      .from(webhooks)
      .where(eq(webhooks.id, p("webhookId"))),
  );
}

/** Most deliveries one removal round deletes. */
const REMOVAL_BATCH = 1000;

/** The delete of up to `limit` log entries of subscription `webhookId` in `status` (and `where`), oldest event first: a range of the log's key. */
export function logRangeDelete(webhookId: Placeholder, status: DeliveryStatus | Placeholder, limit: number, where?: SQL) {
  const d = webhookDeliveries;
  const first = qb
    .select({ eventId: d.eventId })
    .from(d)
    .where(and(eq(d.webhookId, webhookId), eq(d.status, status), where))
    .orderBy(d.eventId)
    .limit(limit);
  return qb.delete(d).where(and(eq(d.webhookId, webhookId), eq(d.status, status), inArray(d.eventId, first)));
}

const removing = params<{ webhookId: number }>();
const logRange = (status: DeliveryStatus) => removing.statement(logRangeDelete(removing("webhookId"), status, REMOVAL_BATCH));

/** One removal round: up to `REMOVAL_BATCH` of the subscription's deliveries per status, then the subscription once none is left (no unbounded cascade). */
const removal = plan({
  exists: subscriptionExists(removing),
  pending: logRange("pending"),
  delivered: logRange("delivered"),
  failed: logRange("failed"),
  subscription: removing.statement(
    qb.delete(webhooks).where(
      and(
        eq(webhooks.id, removing("webhookId")),
        notExists(
          qb
            .select({ one: sql`1` })
            .from(webhookDeliveries)
            .where(eq(webhookDeliveries.webhookId, removing("webhookId"))),
        ),
      ),
    ),
  ),
});

/** The Webhook representation of a row as `WEBHOOK` selects it. */
export function toWebhook(row: RowOf<typeof WEBHOOK>): Webhook {
  const present = WEBHOOK_REPRESENTATION.present(row);
  return { ...present, events: JSON.parse(row.events) as Webhook["events"], enabled: Boolean(row.enabled) };
}

/** Create a subscription honouring `options.claim`: it and its secret, or the key's replay. @throws InvalidInput, LimitReached, IdempotencyKey{InProgress,Reused}. */
export async function createWebhook(
  db: Database,
  input: NewWebhook,
  options: { allowPrivateTargets: boolean; now: Date; max?: number; claim?: KeyClaim },
): Promise<Creation<{ webhook: Webhook; secret: string }>> {
  const problem = webhookTargetProblem(input.url, { allowPrivate: options.allowPrivateTargets });
  if (problem) throw new InvalidInput("url", problem);
  const secret = generateWebhookSecret();
  const values = {
    url: new URL(input.url).href,
    events: JSON.stringify([...new Set(input.events)]),
    secret,
    createdAt: options.now.toISOString(),
    max: options.max ?? MAX_WEBHOOKS,
    ordering: input.ordering ?? "strict",
    maxInFlight: input.maxInFlight ?? MAX_IN_FLIGHT.default,
    rateLimit: input.rateLimit ?? null,
  };
  const { claim } = options;
  const keyed = claim && (await run(db, keyedCreation, { ...values, ...claimValues(claim) }));
  const [row] = (keyed ?? (await run(db, creation, values))).subscription;
  if (row) return { created: { webhook: toWebhook(row), secret } };
  const replay = claim && keyed ? replayUnlessClaimed(keyed.claim, keyed.existing, claim) : null;
  if (replay) return { replay };
  throw new LimitReached("webhooks", values.max);
}

/** Up to `limit` subscriptions with id > `afterId`, ascending. One round trip. */
export async function listWebhooks(db: Database, afterId: number, limit: number): Promise<Webhook[]> {
  const rows = await execute(db, listSubscriptions, { afterId, limit });
  return rows.map(toWebhook);
}

/** @throws NotFound when absent. */
export async function getWebhook(db: Database, webhookId: number): Promise<Webhook> {
  const [row] = await execute(db, subscriptionById, { id: webhookId });
  if (!row) throw new NotFound("webhook", webhookId);
  return toWebhook(row);
}

/** Delete a subscription and its delivery log, in rounds of `REMOVAL_BATCH` deliveries (a write batch each); an attempt in flight may still arrive. @throws NotFound. */
export async function deleteWebhook(db: Database, webhookId: number): Promise<void> {
  for (;;) {
    const { exists, subscription } = await run(db, removal, { webhookId });
    if (exists.length === 0) throw new NotFound("webhook", webhookId);
    if (subscription.rowsAffected === 1) break;
  }
}
