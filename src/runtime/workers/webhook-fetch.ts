/** Workers: the `fetch` of webhook deliveries, guarded against SSRF by host name (docs/webhooks.md#targets); IP literals are the delivery's to check. */
import type { AppConfig, WebhookEgress } from "../../config";
import { isIpLiteralHost } from "../../domain/private-address";
import type { FetchFn } from "../../services/webhooks/delivery";

/** What the Worker's `fetch` can reach, whether private targets are allowed (WEBHOOKS_ALLOW_PRIVATE), and the `fetch` to guard (default: the global one). */
export interface WorkerGuardOptions {
  egress: WebhookEgress;
  allowPrivate: boolean;
  fetch?: FetchFn;
}

/** The error of a target refused for its host name (the code Node's guard uses too). */
function hostNameRefused(hostname: string): Error & { code: string } {
  return Object.assign(new Error(`${hostname} is a host name, and this Worker's fetch may resolve it to a private address.`), { code: "EPRIVATEADDRESS" });
}

/** A `fetch` for webhook deliveries on Workers: `options.fetch` when names are safe (`egress: "public"`, or `allowPrivate`), else one rejecting host names. */
export function workerWebhookFetch({ egress, allowPrivate, fetch: send = (input, init) => fetch(input, init) }: WorkerGuardOptions): FetchFn {
  if (egress === "public" || allowPrivate) return send;
  return async (input, init) => {
    const { hostname } = new URL(input);
    if (!isIpLiteralHost(hostname)) throw hostNameRefused(hostname);
    return send(input, init);
  };
}

/** The delivery `fetch` that the `webhooks` settings allow (WEBHOOKS_EGRESS, WEBHOOKS_ALLOW_PRIVATE). */
export function configuredWebhookFetch(webhooks: AppConfig["webhooks"]): FetchFn {
  return workerWebhookFetch({ egress: webhooks.egress, allowPrivate: webhooks.allowPrivateTargets });
}
