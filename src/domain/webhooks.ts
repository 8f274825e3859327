/** Webhook subscriptions and their deliveries (docs/api.md#events-and-webhooks), as the API shows them. */
import type { EventType } from "./events";

/** Every subscription status: `failing` after a delivery was given up; `disabled` after every attempt failed for `WEBHOOK_DISABLE_AFTER_HOURS`. */
export const WEBHOOK_STATUSES = ["active", "failing", "disabled"] as const;
export type WebhookStatus = (typeof WEBHOOK_STATUSES)[number];

/** Delivery modes: `strict`, one attempt in flight in commit order; `none`, up to `maxInFlight` at once, each event retried on its own. */
export const WEBHOOK_ORDERINGS = ["strict", "none"] as const;
export type WebhookOrdering = (typeof WEBHOOK_ORDERINGS)[number];
/** Bounds and default of `maxInFlight` (docs/webhooks.md#delivery-modes). */
export const MAX_IN_FLIGHT = { min: 1, max: 50, default: 10 } as const;
/** Bounds of `rateLimit`, deliveries per second. */
export const RATE_LIMIT = { min: 1, max: 1000 } as const;

/** Webhook subscription representation (never carries the secret). */
export interface Webhook {
  id: number;
  url: string;
  events: (EventType | "*")[];
  /** False: paused (nothing is sent; its place in the log waits). */
  enabled: boolean;
  /** `failing` after a delivery was given up; back to `active` after the next success or on resume. */
  status: WebhookStatus;
  createdAt: string;
  ordering: WebhookOrdering;
  /** With `ordering: "none"`: most attempts at once. */
  maxInFlight: number;
  /** Most deliveries per second (absent: no limit). */
  rateLimit?: number;
}

/** How a subscription's deliveries go out: `{ordering, maxInFlight, rateLimit}` (docs/webhooks.md#delivery-modes). */
export type DeliveryMode = Pick<Webhook, "ordering" | "maxInFlight"> & { rateLimit: number | null };

/** A subscription to create: its target, the event types it wants (or exactly `["*"]`), and its delivery mode (defaults: strict, 10, none). */
export interface NewWebhook extends Partial<DeliveryMode> {
  url: string;
  events: (EventType | "*")[];
}

/** Every `DeliveryError`. */
export const DELIVERY_ERRORS = ["http_status", "timeout", "refused", "dns", "tls", "private_address", "network"] as const;

/** Why an attempt failed, coarsely, never as raw error text (docs/webhooks.md#webhooks-experimental). */
export type DeliveryError = (typeof DELIVERY_ERRORS)[number];

/** Every delivery status: `failed` is a delivery given up. */
export const DELIVERY_STATUSES = ["pending", "delivered", "failed"] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** The engine's one table of outcomes: what an attempt leads to, the log entry's `status` after it, and its metric `label` (`petstore.webhook.outcome`). */
export const ATTEMPT_OUTCOMES = {
  delivered: { status: "delivered", label: "delivered" },
  retried: { status: "pending", label: "retried" },
  givenUp: { status: "failed", label: "given_up" },
} as const satisfies Record<string, { status: DeliveryStatus; label: string }>;
export type AttemptOutcome = keyof typeof ATTEMPT_OUTCOMES;
/** Every outcome, in the table's order. */
export const OUTCOMES = Object.keys(ATTEMPT_OUTCOMES) as AttemptOutcome[];

/** The give-up rule: a 2xx delivers; a failure with attempts left (`attempts` made so far, this one included) is retried; else it is given up. */
export function outcomeOf(ok: boolean, attempts: number, maxAttempts: number): AttemptOutcome {
  return ok ? "delivered" : attempts >= maxAttempts ? "givenUp" : "retried";
}

/** One (subscription, event) delivery and its attempts so far; event 0 is a `webhook.test`. */
export interface WebhookDelivery {
  webhookId: number;
  eventId: number;
  eventType: EventType | "webhook.test";
  status: DeliveryStatus;
  attempts: number;
  /** While pending: when the next attempt is due. */
  nextAttemptAt?: string;
  lastAttemptAt?: string;
  /** HTTP status of the last attempt's response (absent when no response was received). */
  lastStatusCode?: number;
  /** Coarse reason of the last failed attempt (never raw error text). */
  lastError?: DeliveryError;
  deliveredAt?: string;
}

/** A subscription's change (docs/webhooks.md#managing-a-subscription; JSON Merge Patch, RFC 7396: `rateLimit: null` removes the limit). */
export interface WebhookChange extends Partial<DeliveryMode> {
  url?: string;
  events?: (EventType | "*")[];
  enabled?: boolean;
}

/** Event types in force up to an event id: events up to `upTo` (and after the interval before) are matched against `events`. */
export interface TypesUpTo {
  upTo: number;
  events: readonly string[];
}

/** Most intervals a subscription's type history keeps; past it the two oldest merge into what both wanted. */
export const TYPE_HISTORY_MAX = 20;

/** What decides whether a subscription wants an event: its start, its types now, and the types in force before each change of them. */
export interface Interest {
  /** It receives the events after this id. */
  start: number;
  events: readonly string[];
  /** The types before each change, oldest first (ascending `upTo`); events after the last `upTo` are matched against `events`. */
  history: readonly TypesUpTo[];
}

/** A stored subscription's interest: `previousEvents` is the JSON history, or (older rows) the types in force up to `typesSince`. */
export function storedInterest(row: { start: number; events: string; typesSince: number; previousEvents: string | null }): Interest {
  const previous = row.previousEvents === null ? [] : (JSON.parse(row.previousEvents) as (string | TypesUpTo)[]);
  const history = previous.every((x) => typeof x === "string") ? [{ upTo: row.typesSince, events: previous as string[] }] : (previous as TypesUpTo[]);
  return { start: row.start, events: JSON.parse(row.events) as string[], history: row.previousEvents === null ? [] : history };
}

/** True when the subscription of `interest` wants the event `{id, type}`: each change of types applies to events committed after it. */
export function wants(interest: Interest, event: { id: number; type: string }): boolean {
  if (event.id <= interest.start) return false;
  const types = interest.history.find((x) => event.id <= x.upTo)?.events ?? interest.events;
  return types.includes("*") || types.includes(event.type);
}

/** The types both lists want (`*`: every type). */
function common(a: readonly string[], b: readonly string[]): string[] {
  if (a.includes("*")) return [...b];
  if (b.includes("*")) return [...a];
  return a.filter((type) => b.includes(type));
}

/** The history a change of types keeps before appending the interval it ends: none before `oldest`; past `TYPE_HISTORY_MAX` − 1 the oldest two merge. */
export function historyBeforeChange(interest: Pick<Interest, "history">, oldest: number): TypesUpTo[] {
  const history = interest.history.filter((x) => x.upTo >= oldest);
  while (history.length > TYPE_HISTORY_MAX - 1) {
    const [a, b] = history.splice(0, 2) as [TypesUpTo, TypesUpTo];
    history.unshift({ upTo: b.upTo, events: common(a.events, b.events) });
  }
  return history;
}
