/** OpenAPI route definitions of /webhooks (docs/api.md#events-and-webhooks, Events tag, experimental). */
import { type RouteConfig, z } from "@hono/zod-openapi";
import { errorResponses, idempotencyKeyHeaders, createdContent, idParams, jsonBody, jsonContent, paginationQuery, responseHeaders } from "../../http/schemas";
import { operations, optionalParam } from "../../http/schemas";
import { mergePatchBody } from "../../http/merge-patch";
import { protectedOperation } from "../../middleware/security";
import { DeliveryStatusSchema, NewWebhookSchema, RecoveryResultSchema, NoOptionsSchema, RecoverySchema, SecretRotationSchema } from "./webhooks.schemas";
import { WebhookChangeSchema, WebhookDeliveriesSchema, WebhookDeliverySchema, WebhookSchema, WebhooksSchema } from "./webhooks.schemas";
import { WebhookWithSecretSchema } from "./webhooks.schemas";

const events = operations(["Events"]);
/** An Events operation for staff keys only, `x-stability: experimental` (`callbacks` after the marks, as the document lists them). */
const route = <P extends string, R extends Omit<RouteConfig, "path" | "tags"> & { path: P }>({ callbacks, ...config }: R) =>
  events({ ...config, ...protectedOperation("staff"), "x-stability": "experimental", callbacks } as const);
const webhookIdParams = idParams("webhookId");

const header = (name: string, description: string, example: string) => ({
  name,
  in: "header",
  required: true,
  description,
  schema: { type: "string", example },
});

const SIGNATURE_HEADERS = [
  header("webhook-id", "Message id `evt_<event id>`: the same on every retry, so a receiver can drop duplicates.", "evt_42"),
  header(
    "webhook-timestamp",
    "Unix time (seconds) of this attempt. Reject messages too far from your clock (Standard Webhooks suggests 5 minutes).",
    "1795262400",
  ),
  header(
    "webhook-signature",
    // biome-ignore lint/suspicious/noTemplateCurlyInString: Standard Webhooks' notation for the signed content, shown to API readers as written.
    "`v1,` + base64 HMAC-SHA256 of `${webhook-id}.${webhook-timestamp}.${raw body}`, keyed with the base64-decoded part of the subscription secret after `whsec_` (Standard Webhooks). Verify against the raw body bytes before parsing. For 24 h after a rotation it lists two signatures, space-separated (new secret first): accept the message when any of them verifies.",
    "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=",
  ),
];

/** The delivery request, as an OpenAPI 3.0.3 callback of `POST /webhooks` (a raw object, which zod-to-openapi passes through). */
const deliveryCallback = {
  event: {
    "{$request.body#/url}": {
      post: {
        summary: "An event, delivered to a subscription",
        description:
          "One POST per event whose type the subscription wants, in event order per subscription (the next event is sent only after the previous one was accepted or given up). At least once: retried with exponential backoff and jitter until a 2xx arrives or the configured number of attempts is exhausted; then the subscription is marked `failing` and the next event follows. Redirects are not followed.",
        // No HTTP authentication: the receiver authenticates the sender by the `webhook-signature` header.
        security: [],
        parameters: SIGNATURE_HEADERS,
        requestBody: {
          required: true,
          description: "The Event, exactly as `GET /events` shows it.",
          content: { "application/json": { schema: { $ref: "#/components/schemas/Event" } } },
        },
        responses: {
          "2XX": { description: "Accepted: the delivery is done. The response body is ignored." },
          "4XX": { description: "Refused (e.g. a signature the receiver could not verify): a failed attempt, retried like any other." },
          default: { description: "Anything else (including 3xx, a network error or no answer within the timeout) is a failed attempt and is retried." },
        },
      },
    },
  },
};

export const create = route({
  method: "post",
  path: "/webhooks",
  operationId: "createWebhook",
  summary: "Subscribe a webhook",
  description:
    "Registers `url` for the given event types (at most 500 subscriptions exist at once by default, WEBHOOKS_MAX). Returns the subscription with its signing secret, shown only in this response. Events committed after this call are delivered, signed per Standard Webhooks; earlier ones are in `GET /events`. Delivered and given-up deliveries are deleted after 7 days. Send `Idempotency-Key` to retry safely: the same key and body within 24 h answers 200 with the subscription created the first time, without its secret (never shown twice), and `Idempotent-Replayed: true`.",
  request: { headers: idempotencyKeyHeaders, body: jsonBody(NewWebhookSchema, "The subscription.") },
  responses: {
    200: createdContent(WebhookSchema, "Replay of an earlier request with the same Idempotency-Key: the subscription it created, without its secret."),
    201: { ...jsonContent(WebhookWithSecretSchema, "The subscription and its secret."), headers: { Location: responseHeaders.Location } },
    ...errorResponses([401, 403, 413, 415, 429, 500, 503], {
      400: "Invalid JSON or body, an unknown event type, or a refused target URL (`validation_error`).",
      409: "The most subscriptions allowed exist already (`subscription_limit_reached`), or a request with this Idempotency-Key is still in progress (`concurrent_update`).",
      422: "The Idempotency-Key was used with another body (`idempotency_key_reused`).",
    }),
  },
  callbacks: deliveryCallback,
});

export const list = route({
  method: "get",
  path: "/webhooks",
  operationId: "listWebhooks",
  summary: "List webhook subscriptions",
  description: 'Subscriptions ordered by id, without secrets; paginated with `Link: rel="next"`.',
  request: { query: z.strictObject({ ...paginationQuery }) },
  responses: {
    200: { ...jsonContent(WebhooksSchema, "A page of subscriptions."), headers: { Link: responseHeaders.Link } },
    ...errorResponses([400, 401, 403, 429, 500, 503]),
  },
});

export const get = route({
  method: "get",
  path: "/webhooks/{webhookId}",
  operationId: "getWebhook",
  summary: "Get a webhook subscription",
  description: "The subscription and its status (`failing` after a delivery was given up); the secret is never shown again.",
  request: { params: webhookIdParams },
  responses: { 200: jsonContent(WebhookSchema, "The subscription (without its secret)."), ...errorResponses([400, 401, 403, 404, 429, 500, 503]) },
});

export const remove = route({
  method: "delete",
  path: "/webhooks/{webhookId}",
  operationId: "deleteWebhook",
  summary: "Delete a webhook subscription",
  description: "Stops deliveries to the subscription and deletes its delivery log.",
  request: { params: webhookIdParams },
  responses: { 204: { description: "Deleted." }, ...errorResponses([400, 401, 403, 404, 429, 500, 503]) },
});

export const deliveries = route({
  method: "get",
  path: "/webhooks/{webhookId}/deliveries",
  operationId: "listWebhookDeliveries",
  summary: "List a subscription's deliveries",
  description: 'Deliveries in event order with their attempts and last result; paginated with `Link: rel="next"`.',
  request: {
    params: webhookIdParams,
    query: z.strictObject({ status: optionalParam(DeliveryStatusSchema, "query", "status", "Only deliveries in this state."), ...paginationQuery }),
  },
  responses: {
    200: { ...jsonContent(WebhookDeliveriesSchema, "A page of deliveries."), headers: { Link: responseHeaders.Link } },
    ...errorResponses([400, 401, 403, 404, 429, 500, 503]),
  },
});

const eventParams = webhookIdParams.extend(idParams("eventId").shape);

export const update = route({
  method: "patch",
  path: "/webhooks/{webhookId}",
  operationId: "updateWebhook",
  summary: "Change a webhook subscription",
  description:
    "A JSON Merge Patch (RFC 7396) of `url`, `events` and `enabled`: members left out are kept. A new URL passes the same checks as at creation. New event types apply to events committed after the change. `enabled: false` pauses (nothing is sent, nothing is lost: the subscription's place in the event log waits, within event retention); `enabled: true` resumes in order and revives a `failing` subscription. A change that changes nothing writes nothing.",
  request: { params: webhookIdParams, body: mergePatchBody(WebhookChangeSchema, "The members to change.") },
  responses: {
    200: jsonContent(WebhookSchema, "The subscription after the change."),
    ...errorResponses([401, 403, 404, 413, 415, 429, 500, 503], {
      400: "Invalid JSON or body: no member, a `null` member, an unknown event type, or a refused target URL (`validation_error`).",
    }),
  },
});

export const rotate = route({
  method: "post",
  path: "/webhooks/{webhookId}/secret/rotate",
  operationId: "rotateWebhookSecret",
  summary: "Rotate a subscription's signing secret",
  description:
    "Replaces the signing secret with the given one or a generated one, shown only in this response. For 24 h every delivery is signed with both (`webhook-signature: v1,<new> v1,<old>`), then the old secret is forgotten. Rotating to the secret already current changes nothing, so retrying a rotation with a given secret is harmless.",
  request: { params: webhookIdParams, body: { ...jsonBody(SecretRotationSchema, "The new secret, or nothing to generate one."), required: false } },
  responses: {
    200: jsonContent(WebhookWithSecretSchema, "The subscription and its new secret."),
    ...errorResponses([400, 401, 403, 404, 413, 415, 429, 500, 503]),
  },
});

export const resend = route({
  method: "post",
  path: "/webhooks/{webhookId}/events/{eventId}/resend",
  operationId: "resendWebhookEvent",
  summary: "Resend one event to a subscription",
  description:
    "Makes one more delivery of an event the subscription wants and retention still holds, outside the ordered stream, with the event's own `webhook-id` (receivers deduplicate on it). Its outcome replaces the event's entry in the delivery log.",
  request: { params: eventParams, body: { ...jsonBody(NoOptionsSchema, "Nothing, or `{}`."), required: false } },
  responses: {
    202: jsonContent(WebhookDeliverySchema, "The delivery, queued."),
    ...errorResponses([400, 401, 403, 409, 413, 415, 429, 500, 503], {
      404: "No such subscription, or no such event that it wants and retention still holds (`not_found`).",
    }),
  },
});

export const recover = route({
  method: "post",
  path: "/webhooks/{webhookId}/recover",
  operationId: "recoverWebhook",
  summary: "Deliver again what was given up since a time",
  description:
    "Queues, in event order, one more delivery of every event committed at or after `since` whose delivery to this subscription was given up and that retention still holds. Events committed while the subscription was paused are not lost: they wait at its place in the log and are delivered on resume.",
  request: { params: webhookIdParams, body: jsonBody(RecoverySchema, "Since when.") },
  responses: {
    202: jsonContent(RecoveryResultSchema, "How many deliveries were queued (at most the room left under WEBHOOK_MAX_REDELIVERIES)."),
    ...errorResponses([400, 401, 403, 404, 409, 413, 415, 429, 500, 503]),
  },
});

export const test = route({
  method: "post",
  path: "/webhooks/{webhookId}/test",
  operationId: "testWebhook",
  summary: "Send a test event",
  description:
    "Sends a signed `webhook.test` event (`id` 0, `data: {webhookId}`) at once, retried like any delivery. It appears in the delivery log as event 0 (the latest test only), not in `GET /events`.",
  request: { params: webhookIdParams, body: { ...jsonBody(NoOptionsSchema, "Nothing, or `{}`."), required: false } },
  responses: { 202: jsonContent(WebhookDeliverySchema, "The test delivery, queued."), ...errorResponses([400, 401, 403, 404, 409, 413, 415, 429, 500, 503]) },
});
