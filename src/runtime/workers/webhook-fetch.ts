/**
 * Workers: the `fetch` of webhook deliveries (src/services/webhooks/delivery.ts),
 * guarded against SSRF by host name (docs/api.md#events-and-webhooks) the only way a Worker can be: a
 * Worker cannot resolve a name itself nor choose the address its `fetch`
 * connects to. Where that `fetch` reaches public addresses only
 * (`egress: "public"`: deployed on Cloudflare, whose network the request leaves
 * from; or workerd whose network allows "public" only and filters what names
 * resolve to), names are sent as they are. Anywhere else (`egress: "host"`:
 * `wrangler dev`, whose network allows private addresses) the runtime resolves
 * names on the machine it runs on and may connect to its loopback or private
 * networks, so a target named by a host name is refused (code `EPRIVATEADDRESS`, recorded as `private_address`)
 * unless private targets are allowed. IP literals pass: the delivery checks
 * them itself. Why, and what Cloudflare documents: docs/webhooks.md, "Targets".
 */
import type { WebhookEgress } from "../../config";
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

/**
 * A `fetch` for webhook deliveries on Workers: `options.fetch` itself when
 * names are safe to send (`egress: "public"`, or `allowPrivate`); else one
 * that rejects every URL whose host is a name, before any connection.
 */
export function workerWebhookFetch({ egress, allowPrivate, fetch: send = (input, init) => fetch(input, init) }: WorkerGuardOptions): FetchFn {
  if (egress === "public" || allowPrivate) return send;
  return async (input, init) => {
    const { hostname } = new URL(input);
    if (!isIpLiteralHost(hostname)) throw hostNameRefused(hostname);
    return send(input, init);
  };
}
