/** Webhook signatures per Standard Webhooks v1 (docs/webhooks.md#webhooks-experimental), made with the reference `standardwebhooks` package. */
import { Webhook } from "standardwebhooks";

/** Bytes of key material in a new secret (the convention asks for 24..64). */
const SECRET_BYTES = 32;

/** A new subscription secret: `whsec_` + base64 of 32 random bytes (Web Crypto). */
export function generateWebhookSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(SECRET_BYTES));
  return `whsec_${btoa(String.fromCharCode(...bytes))}`;
}

/** Whether `secret` is a signing secret a subscriber may choose: `whsec_` + base64 of 24..64 bytes (Standard Webhooks). */
export function isWebhookSecret(secret: string): boolean {
  const match = /^whsec_([A-Za-z0-9+/]+={0,2})$/.exec(secret);
  if (!match || match[1]!.length % 4 !== 0) return false;
  const bytes = (match[1]!.length / 4) * 3 - (match[1]!.match(/=/g)?.length ?? 0);
  return bytes >= 24 && bytes <= 64;
}

/** The `webhook-id` of an event's deliveries: stable across retries, resends and subscriptions. */
export function webhookMessageId(eventId: number): string {
  return `evt_${eventId}`;
}

/** Standard Webhooks headers of one attempt of `body` at `at`, signed with each of `secrets` (newest first; `v1,<base64>` each). */
export function signedWebhookHeaders(secrets: readonly string[], messageId: string, at: Date, body: string): Record<string, string> {
  return {
    "content-type": "application/json",
    "user-agent": "Petstore-Webhooks/1.0",
    "webhook-id": messageId,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": secrets.map((secret) => new Webhook(secret).sign(messageId, at, body)).join(" "),
  };
}
