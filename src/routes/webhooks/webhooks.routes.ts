/** OpenAPI route definitions of /webhooks (docs/api.md#events-and-webhooks, Events tag, experimental). */
import { z } from "@hono/zod-openapi";
import {
  errorResponses,
  idempotencyKeyHeaders,
  idempotentReplayedHeader,
  idParams,
  jsonBody,
  jsonContent,
  paginationQuery,
  responseHeaders,
  operations,
} from "../../http/schemas";
import { protectedOperation } from "../../middleware/security";
import { DeliveryStatusSchema, NewWebhookSchema, WebhookDeliveriesSchema, WebhookSchema, WebhooksSchema, WebhookWithSecretSchema } from "./webhooks.schemas";

const route = operations(["Events"]);
const staff = protectedOperation("staff");
const webhookIdParams = idParams("webhookId");

const SIGNATURE_HEADERS = [
  {
    name: "webhook-id",
    in: "header",
    required: true,
    description: "Message id `evt_<event id>`: the same on every retry, so a receiver can drop duplicates.",
    schema: { type: "string", example: "evt_42" },
  },
  {
    name: "webhook-timestamp",
    in: "header",
    required: true,
    description: "Unix time (seconds) of this attempt. Reject messages too far from your clock (Standard Webhooks suggests 5 minutes).",
    schema: { type: "string", example: "1795262400" },
  },
  {
    name: "webhook-signature",
    in: "header",
    required: true,
    description:
      // biome-ignore lint/suspicious/noTemplateCurlyInString: Standard Webhooks' notation for the signed content, shown to API readers as written.
      "`v1,` + base64 HMAC-SHA256 of `${webhook-id}.${webhook-timestamp}.${raw body}`, keyed with the base64-decoded part of the subscription secret after `whsec_` (Standard Webhooks). Verify against the raw body bytes before parsing.",
    schema: { type: "string", example: "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=" },
  },
];

/**
 * The delivery request, as an OpenAPI 3.0.3 callback of `POST /webhooks`
 * (raw object: zod-to-openapi passes operation fields it does not own through).
 */
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
    "Registers `url` for the given event types (at most 50 subscriptions exist at once). Returns the subscription with its signing secret, shown only in this response. Events committed after this call are delivered, signed per Standard Webhooks; earlier ones are in `GET /events`. A `failing` subscription stops accumulating deliveries once 10,000 are pending; delivered and given-up deliveries are deleted after 7 days. Send `Idempotency-Key` to retry safely: the same key and body within 24 h answers 200 with the subscription created the first time, without its secret (never shown twice), and `Idempotent-Replayed: true`.",
  ...staff,
  "x-stability": "experimental",
  request: { headers: idempotencyKeyHeaders, body: jsonBody(NewWebhookSchema, "The subscription.") },
  responses: {
    200: {
      ...jsonContent(WebhookSchema, "Replay of an earlier request with the same Idempotency-Key: the subscription it created, without its secret."),
      headers: { Location: responseHeaders.Location, ...idempotentReplayedHeader },
    },
    201: { ...jsonContent(WebhookWithSecretSchema, "The subscription and its secret."), headers: { Location: responseHeaders.Location } },
    ...errorResponses([401, 403, 413, 415, 429, 500, 503], {
      400: "Invalid JSON or body, an unknown event type, or a refused target URL (`validation_error`).",
      409: "50 subscriptions exist already (`subscription_limit_reached`), or a request with this Idempotency-Key is still in progress (`concurrent_update`).",
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
  ...staff,
  "x-stability": "experimental",
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
  ...staff,
  "x-stability": "experimental",
  request: { params: webhookIdParams },
  responses: {
    200: jsonContent(WebhookSchema, "The subscription (without its secret)."),
    ...errorResponses([400, 401, 403, 404, 429, 500, 503]),
  },
});

export const remove = route({
  method: "delete",
  path: "/webhooks/{webhookId}",
  operationId: "deleteWebhook",
  summary: "Delete a webhook subscription",
  description: "Stops deliveries to the subscription and deletes its delivery log.",
  ...staff,
  "x-stability": "experimental",
  request: { params: webhookIdParams },
  responses: {
    204: { description: "Deleted." },
    ...errorResponses([400, 401, 403, 404, 429, 500, 503]),
  },
});

export const deliveries = route({
  method: "get",
  path: "/webhooks/{webhookId}/deliveries",
  operationId: "listWebhookDeliveries",
  summary: "List a subscription's deliveries",
  description: 'Deliveries in event order with their attempts and last result; paginated with `Link: rel="next"`.',
  ...staff,
  "x-stability": "experimental",
  request: {
    params: webhookIdParams,
    query: z.strictObject({
      status: DeliveryStatusSchema.optional().openapi({
        param: { name: "status", in: "query", required: false, description: "Only deliveries in this state." },
      }),
      ...paginationQuery,
    }),
  },
  responses: {
    200: { ...jsonContent(WebhookDeliveriesSchema, "A page of deliveries."), headers: { Link: responseHeaders.Link } },
    ...errorResponses([400, 401, 403, 404, 429, 500, 503]),
  },
});
