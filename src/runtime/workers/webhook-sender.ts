/** Workers: an unordered turn's sends spread over invocations of their own, calls of the Worker's `WebhookSender` entrypoint (docs/webhooks.md#workers). */
import type { AppConfig } from "../../config";
import { type Link, type Sent, type Spread, sendChain } from "../../services/webhooks/chain";
import type { Claimed } from "../../services/webhooks/claims";
import { SendSlots } from "../../services/webhooks/dispatch";
import { DISPATCH_CONNECTIONS } from "./dispatch-runs";
import { configuredWebhookFetch } from "./webhook-fetch";

/** Worker invocations one request may make through service bindings, its own included (https://developers.cloudflare.com/workers/runtime-apis/bindings/service-bindings/#limits). */
const INVOCATIONS = 32;

/** What `WebhookSender` answers: `send`. */
export interface Sender {
  send(s: Claimed, links: Link[], inFlight: number): Promise<Sent[]>;
}

/** Send all of `links` to `s`, `inFlight` at once (at most an invocation's send slots): what was sent, in order. Never throws. */
export function sendAll(config: AppConfig, s: Claimed, links: Link[], inFlight: number): Promise<Sent[]> {
  const fetch = configuredWebhookFetch(config.webhooks);
  const slots = new SendSlots(Math.min(inFlight, DISPATCH_CONNECTIONS.sends));
  const slot = <T>(send: () => Promise<T>) => slots.run(send);
  const options = { config, fetch, now: () => new Date(), random: Math.random, stop: () => false, slot, quota: { left: links.length }, inFlight };
  return sendChain(s, links, Number.POSITIVE_INFINITY, options);
}

/** One run's spread over `sender` (the `WebhookSender` loopback binding): four sends a call, at most `INVOCATIONS - 1` calls. */
export function spreadOver(sender: Sender): Spread {
  return { slots: DISPATCH_CONNECTIONS.sends, calls: { left: INVOCATIONS - 1 }, send: (s, links, inFlight) => sender.send(s, links, inFlight) };
}
