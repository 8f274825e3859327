/** Webhook signatures per Standard Webhooks v1 (docs/webhooks.md#webhooks-experimental), made with the reference `standardwebhooks` package. */
import { Webhook } from "standardwebhooks";

/** Bytes of key material in a new secret (the convention asks for 24..64). */
const SECRET_BYTES = 32;

/** A new subscription secret: `whsec_` + base64 of 32 random bytes (Web Crypto). */
export function generateWebhookSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(SECRET_BYTES));
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return `whsec_${btoa(binary)}`;
}

/** The `webhook-id` of an event's deliveries: stable across retries and subscriptions. */
export function webhookMessageId(eventId: number): string {
  return `evt_${eventId}`;
}

/** Request headers of one delivery attempt of `body` (the exact bytes sent), signed with `secret` (`whsec_…`) at `at` (second precision). */
export function signedWebhookHeaders(secret: string, messageId: string, at: Date, body: string): Record<string, string> {
  return {
    "content-type": "application/json",
    "user-agent": "Petstore-Webhooks/1.0",
    "webhook-id": messageId,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": new Webhook(secret).sign(messageId, at, body),
  };
}
