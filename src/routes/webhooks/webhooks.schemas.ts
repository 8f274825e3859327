/** Payload shapes of webhook subscriptions and deliveries (docs/api.md#events-and-webhooks, experimental). */
import { z } from "@hono/zod-openapi";
import { mergePatchSchema } from "../../http/merge-patch";
import { idNumber as id, MAX_ID, timestamp } from "../../http/schemas";
import { EVENT_TYPES } from "../../domain/events";
import { DELIVERY_ERRORS, DELIVERY_STATUSES, MAX_IN_FLIGHT, RATE_LIMIT, WEBHOOK_ORDERINGS, WEBHOOK_STATUSES } from "../../domain/webhooks";

const eventTypes = z
  .array(z.enum([...EVENT_TYPES, "*"]))
  .min(1)
  .max(EVENT_TYPES.length + 1)
  .refine((types) => !types.includes("*") || types.length === 1, '"*" (every type) must be the only entry.')
  .openapi({
    description: 'Event types to receive (see EventType), or exactly `["*"]` for every type, including types added later. Duplicates are ignored.',
    example: ["pet.created", "pet.updated"],
  });

const targetUrl = z.string().min(1).max(2000).openapi({
  format: "uri",
  description:
    "Where deliveries are POSTed: an absolute http(s) URL without credentials that names a host. Addresses that are not global unicast (loopback, private, link-local, documentation and other special-purpose ranges) and `localhost` are refused unless the deployment allows them (WEBHOOKS_ALLOW_PRIVATE).",
  example: "https://example.com/petstore/events",
});

const ordering = z.enum(WEBHOOK_ORDERINGS).openapi({
  description:
    "`strict` (default): one attempt in flight, events in commit order, a failing event holds the later ones back. `none`: up to `maxInFlight` attempts at once, each event retried on its own (receivers order by `occurredAt` or the event id).",
  example: "strict",
});
const maxInFlight = z
  .number()
  .int()
  .min(MAX_IN_FLIGHT.min)
  .max(MAX_IN_FLIGHT.max)
  .openapi({
    description: `With \`ordering: "none"\`: most attempts at once (default ${MAX_IN_FLIGHT.default}).`,
    example: MAX_IN_FLIGHT.default,
  });
const rateLimit = z.number().int().min(RATE_LIMIT.min).max(RATE_LIMIT.max).openapi({
  description: "Most deliveries per second to the endpoint (absent: no limit), to protect the receiver.",
  example: 20,
});

export const NewWebhookSchema = z
  .strictObject({ url: targetUrl, events: eventTypes, ordering: ordering.optional(), maxInFlight: maxInFlight.optional(), rateLimit: rateLimit.optional() })
  .openapi("NewWebhook", { description: "A webhook subscription to create." });

export const WebhookChangeSchema = mergePatchSchema(
  "WebhookChange",
  {
    url: targetUrl,
    events: eventTypes.openapi({ description: 'Event types to receive from the next committed event on (see EventType), or exactly `["*"]`.' }),
    enabled: z.boolean().openapi({
      description:
        "`false` pauses: nothing is sent and the subscription's place in the event log waits (within event retention). `true` resumes in order and revives a `failing` subscription.",
    }),
    ordering,
    maxInFlight,
    rateLimit: rateLimit.openapi({ description: "Most deliveries per second; `null` removes the limit." }),
  },
  ["rateLimit"],
  "a subscription",
);

export const SecretRotationSchema = z
  .strictObject({
    secret: z.string().max(100).optional().openapi({
      description: "The new secret, `whsec_` + base64 of 24 to 64 bytes; generated when absent. Rotating to the current secret changes nothing.",
      example: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    }),
  })
  .openapi("SecretRotation", { description: "A rotation of the signing secret: for 24 h every delivery carries both signatures." });

export const RecoverySchema = z
  .strictObject({
    since: z.iso
      .datetime({ offset: true })
      // Instants are compared as RFC 3339 UTC text, which orders them only within the years 0000–9999.
      .refine((text) => Math.abs(new Date(text).getUTCFullYear() - 5000) <= 4999, "Must be an instant in the years 0001 to 9999 (UTC).")
      .openapi({ format: "date-time", description: "Events committed at or after this instant (UTC years 0001–9999).", example: "2026-11-21T12:00:00Z" }),
  })
  .openapi("WebhookRecovery", { description: "Which given-up deliveries to make again." });

/** The body of an operation that takes no options: nothing, or an empty object (an unknown member is refused). */
export const NoOptionsSchema = z.strictObject({}).openapi("NoOptions", { description: "No options: send no body, or `{}`." });

export const RecoveryResultSchema = z
  .object({ queued: z.number().int().min(0).openapi({ description: "How many deliveries were queued, in event order.", example: 3 }) })
  .openapi("WebhookRecoveryResult");

export const WebhookSchema = z
  .object({
    id,
    url: z.string().openapi({ format: "uri", example: "https://example.com/petstore/events" }),
    events: z.array(z.string()).openapi({ description: 'Subscribed event types, or `["*"]`.', example: ["pet.created", "pet.updated"] }),
    enabled: z.boolean().openapi({ description: "`false`: paused; nothing is sent and its place in the event log waits." }),
    status: z.enum(WEBHOOK_STATUSES).openapi({
      description:
        "`failing` after a delivery was given up (retries exhausted); back to `active` after the next successful delivery, or when resumed with `enabled: true`.",
    }),
    createdAt: timestamp,
    ordering,
    maxInFlight,
    rateLimit: rateLimit.optional(),
  })
  .openapi("Webhook", { description: "A webhook subscription (without its secret)." });

export const WebhooksSchema = z.array(WebhookSchema).openapi("Webhooks");

export const WebhookWithSecretSchema = WebhookSchema.extend({
  secret: z.string().openapi({
    description: "Signing secret `whsec_<base64>` (Standard Webhooks). Shown only in this response; store it to verify `webhook-signature`.",
    example: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  }),
}).openapi("WebhookWithSecret", { description: "The created subscription and its signing secret (shown once)." });

export const WebhookDeliverySchema = z
  .object({
    webhookId: id,
    eventId: z
      .number()
      .int()
      .min(0)
      .max(MAX_ID)
      .openapi({ format: "int64", description: "The event delivered; 0 for the subscription's latest `webhook.test`.", example: 42 }),
    eventType: z.string().openapi({ description: "Type of the delivered event (see EventType), or `webhook.test`.", example: "pet.created" }),
    status: z.enum(DELIVERY_STATUSES).openapi({
      description:
        "`pending`: not yet accepted, retried with exponential backoff; `delivered`: a 2xx was received; `failed`: given up after the configured number of attempts.",
    }),
    attempts: z.number().int().min(0).openapi({ example: 1 }),
    nextAttemptAt: timestamp.optional().openapi({ description: "While pending: when the next attempt is due." }),
    lastAttemptAt: timestamp.optional(),
    lastStatusCode: z.number().int().optional().openapi({ description: "HTTP status of the last response (absent when none was received).", example: 200 }),
    lastError: z.enum(DELIVERY_ERRORS).optional().openapi({
      description:
        "Why the last attempt failed, coarsely: `http_status` (see `lastStatusCode`), `timeout`, `refused` (connection refused), `dns` (the name did not resolve), `tls` (handshake or certificate), `private_address` (the target is or resolves to a loopback, private or link-local address), `network` (anything else).",
      example: "http_status",
    }),
    deliveredAt: timestamp.optional(),
  })
  .openapi("WebhookDelivery", { description: "One event's delivery to one subscription, from its first attempt (a resend replaces it)." });

export const WebhookDeliveriesSchema = z.array(WebhookDeliverySchema).openapi("WebhookDeliveries");

export const DeliveryStatusSchema = z.enum(DELIVERY_STATUSES);
