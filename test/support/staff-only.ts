/**
 * The operations only staff may call (docs/api.md#authorisation), in one place: test/resources/auth-matrix.test.ts requires the served
 * document's `x-roles: [staff]` operations to be exactly these. A new operation is staff-only by being added here, and the matrix then
 * checks its 403 for a customer; one left out must be public or open to customers.
 */
export const STAFF_ONLY = [
  "POST /pets",
  "PUT /pets/{petId}",
  "PATCH /pets/{petId}",
  "DELETE /pets/{petId}",
  "POST /categories",
  "PATCH /categories/{categoryId}",
  "DELETE /categories/{categoryId}",
  "PUT /store/inventory/{petId}",
  "PATCH /store/orders/{orderId}",
  "GET /events",
  "GET /webhooks",
  "POST /webhooks",
  "GET /webhooks/{webhookId}",
  "PATCH /webhooks/{webhookId}",
  "DELETE /webhooks/{webhookId}",
  "GET /webhooks/{webhookId}/deliveries",
  "POST /webhooks/{webhookId}/secret/rotate",
  "POST /webhooks/{webhookId}/events/{eventId}/resend",
  "POST /webhooks/{webhookId}/recover",
  "POST /webhooks/{webhookId}/test",
] as const;
