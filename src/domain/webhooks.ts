/** Webhook subscriptions and their deliveries (docs/api.md#events-and-webhooks), as the API shows them. */
import type { EventType } from "./events";

export type WebhookStatus = "active" | "failing";

/** Webhook subscription representation (never carries the secret). */
export interface Webhook {
  id: number;
  url: string;
  events: (EventType | "*")[];
  /** `failing` after a delivery was given up; back to `active` after the next success. */
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

/** One (subscription, event) delivery and its attempts so far. */
export interface WebhookDelivery {
  id: number;
  webhookId: number;
  eventId: number;
  eventType: EventType;
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
