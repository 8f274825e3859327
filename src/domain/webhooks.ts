/** Webhook subscriptions and their deliveries (docs/api.md#events-and-webhooks), as the API shows them. */
import type { EventType } from "./events";

export type WebhookStatus = "active" | "failing";

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
}

/** A subscription to create: its target and the event types it wants (or exactly `["*"]`). */
export interface NewWebhook {
  url: string;
  events: (EventType | "*")[];
}

/** Every `DeliveryError`. */
export const DELIVERY_ERRORS = ["http_status", "timeout", "refused", "dns", "tls", "private_address", "network"] as const;

/**
 * Why an attempt failed, coarsely, never as raw error text (docs/webhooks.md#webhooks-experimental): `http_status` (non-2xx), `timeout`,
 * `refused`, `dns`, `tls`, `private_address` (the target is or resolves to a non-public address), `network` (anything else).
 */
export type DeliveryError = (typeof DELIVERY_ERRORS)[number];

export type DeliveryStatus = "pending" | "delivered" | "failed";

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

/** A subscription's change `{url?, events?, enabled?}` (docs/webhooks.md#managing-a-subscription; JSON Merge Patch, RFC 7396). */
export interface WebhookChange {
  url?: string;
  events?: (EventType | "*")[];
  enabled?: boolean;
}

/** What decides whether a subscription wants an event: its start, its types, and the types of events up to its last change of types. */
export interface Interest {
  /** It receives the events after this id. */
  start: number;
  events: readonly string[];
  /** Events up to this id are matched against `previousEvents` (when not null). */
  typesSince: number;
  previousEvents: readonly string[] | null;
}

/** The interest of a subscription as stored: its type lists are JSON arrays of event types. */
export function storedInterest(row: { start: number; events: string; typesSince: number; previousEvents: string | null }): Interest {
  return {
    start: row.start,
    events: JSON.parse(row.events) as string[],
    typesSince: row.typesSince,
    previousEvents: row.previousEvents === null ? null : (JSON.parse(row.previousEvents) as string[]),
  };
}

/** True when the subscription of `interest` wants the event `{id, type}`: new types apply to events committed after the change (docs/webhooks.md#managing-a-subscription). */
export function wants(interest: Interest, event: { id: number; type: string }): boolean {
  if (event.id <= interest.start) return false;
  const types = event.id <= interest.typesSince && interest.previousEvents ? interest.previousEvents : interest.events;
  return types.includes("*") || types.includes(event.type);
}

/** The types both lists want (`*`: every type). */
function common(a: readonly string[], b: readonly string[]): string[] {
  if (a.includes("*")) return [...b];
  if (b.includes("*")) return [...a];
  return a.filter((type) => b.includes(type));
}

/**
 * The types that apply to events committed before a change of `interest`'s types to `next`: those wanted before and after it, so a removed
 * type stops at once and an added one starts with the next event. Two changes before the stream reaches the first keep what every list wanted.
 */
export function typesBefore(interest: Pick<Interest, "events" | "previousEvents">, next: readonly string[]): string[] {
  return common(common(interest.previousEvents ?? interest.events, interest.events), next);
}
