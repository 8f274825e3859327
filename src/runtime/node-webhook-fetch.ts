/**
 * Node: the `fetch` webhook deliveries use (src/services/webhook-dispatcher.ts),
 * guarded against SSRF by host name (API.md §6).
 *
 * The target's host name is resolved when the connection is made, by the
 * `lookup` hook of an undici Agent (`connect.lookup`, passed to
 * `net.connect`/`tls.connect`): every address it returns is checked with
 * `isPrivateAddress`, and the socket connects to exactly the addresses that
 * were checked — there is no second lookup for a rebinding DNS answer to slip
 * into. A refused resolution fails the attempt with an error whose code is
 * `EPRIVATEADDRESS` (the dispatcher records the outcome `private_address`).
 * With `allowPrivate` (WEBHOOKS_ALLOW_PRIVATE=true) nothing is refused.
 *
 * IP-literal hosts are not looked up by Node; the dispatcher checks them
 * itself (`isPrivateHost`). On Workers there is no such hook and none is
 * needed: DNS is Cloudflare's, and a Worker's fetch cannot reach private or
 * loopback addresses.
 */
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { Agent, fetch as undiciFetch } from "undici";
import type { FetchFn } from "../services/webhook-dispatcher";
import { isPrivateAddress } from "../services/webhooks.service";

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

/**
 * A `lookup` for `net.connect` that resolves once with `resolveAll` and fails
 * when any address is refused (unless `allowPrivate`); answers in the form the
 * caller asked for (`options.all` or a single address).
 */
export function guardedLookup(allowPrivate: boolean, resolveAll: ResolveAll = systemResolveAll) {
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
export function guardedWebhookFetch(allowPrivate: boolean, resolveAll?: ResolveAll): FetchFn {
  const agent = new Agent({ connect: { lookup: guardedLookup(allowPrivate, resolveAll) } });
  return (input, init) => undiciFetch(input, { ...(init as Parameters<typeof undiciFetch>[1]), dispatcher: agent }) as unknown as Promise<Response>;
}
