/**
 * Node: the `fetch` of webhook deliveries (src/services/webhooks/delivery.ts),
 * guarded against SSRF by host name (docs/api.md#events-and-webhooks). The host is resolved once, by
 * the undici Agent's `connect.lookup` hook; every address is checked
 * (src/domain/private-address.ts) and the socket connects to exactly those
 * addresses, so a rebinding DNS answer cannot slip in. A refused resolution
 * fails with code `EPRIVATEADDRESS`. IP literals are not looked up: the
 * delivery checks them itself. Workers cannot hook their fetch: see
 * ./worker-webhook-fetch.ts.
 */
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { Agent, fetch as undiciFetch } from "undici";
import { isPrivateAddress } from "../../domain/private-address";
import type { FetchFn } from "../../services/webhooks/delivery";

/** `dns.lookup` with `all: true`: every address of `hostname`. */
export type ResolveAll = (hostname: string, callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void) => void;

const systemResolveAll: ResolveAll = (hostname, callback) => dnsLookup(hostname, { all: true }, callback);

/** The error of a resolution that names a refused address. */
function privateAddressError(hostname: string): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error(`${hostname} resolves to a loopback, private or link-local address.`);
  error.code = "EPRIVATEADDRESS";
  return error;
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** Whether private addresses are allowed (WEBHOOKS_ALLOW_PRIVATE), and the resolver (default `dns.lookup`; tests inject one). */
export interface GuardOptions {
  allowPrivate: boolean;
  resolveAll?: ResolveAll;
}

/**
 * A `lookup` for `net.connect` that resolves once with `resolveAll` and fails
 * when any address is refused (unless `allowPrivate`); answers in the form the
 * caller asked for (`options.all` or a single address).
 */
export function guardedLookup({ allowPrivate, resolveAll = systemResolveAll }: GuardOptions) {
  return (hostname: string, options: { all?: boolean; family?: number | string }, callback: LookupCallback): void => {
    resolveAll(hostname, (error, found) => {
      if (error) return callback(error, []);
      const family = options.family === 6 || options.family === "IPv6" ? 6 : options.family === 4 || options.family === "IPv4" ? 4 : 0;
      const addresses = found.filter((a) => family === 0 || a.family === family);
      if (addresses.length === 0) {
        const notFound: NodeJS.ErrnoException = new Error(`${hostname} has no address.`);
        notFound.code = "ENOTFOUND";
        return callback(notFound, []);
      }
      if (!allowPrivate && addresses.some((a) => isPrivateAddress(a.address))) return callback(privateAddressError(hostname), []);
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

/**
 * A `fetch` for webhook deliveries on Node whose connections go only to
 * addresses checked by `guardedLookup`. Its Agent keeps connections alive
 * per origin (a receiver of many deliveries reuses them).
 */
export function guardedWebhookFetch(options: GuardOptions): FetchFn {
  const agent = new Agent({ connect: { lookup: guardedLookup(options) } });
  return (input, init) => undiciFetch(input, { ...(init as Parameters<typeof undiciFetch>[1]), dispatcher: agent }) as unknown as Promise<Response>;
}
