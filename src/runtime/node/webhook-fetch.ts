/**
 * Node: the `fetch` of webhook deliveries, guarded against SSRF (docs/webhooks.md#targets): a name is resolved once at connect time and
 * every address checked; refused: code `EPRIVATEADDRESS`. IP literals are the delivery's to check.
 */
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { Agent, fetch as undiciFetch } from "undici";
import { isPrivateAddress } from "../../domain/private-address";
import type { FetchFn } from "../../services/webhooks/delivery";

/** `dns.lookup` with `all: true`: every address of `hostname`. */
export type ResolveAll = (hostname: string, callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void) => void;

const systemResolveAll: ResolveAll = (hostname, callback) => dnsLookup(hostname, { all: true }, callback);

/** An error with Node's `code`: `ENOTFOUND`, or `EPRIVATEADDRESS` for a resolution that names a refused address. */
const codedError = (message: string, code: string): NodeJS.ErrnoException => Object.assign(new Error(message), { code });

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** Whether private addresses are allowed (WEBHOOKS_ALLOW_PRIVATE), and the resolver (default `dns.lookup`; tests inject one). */
export interface GuardOptions {
  allowPrivate: boolean;
  resolveAll?: ResolveAll;
}

/** A `lookup` for `net.connect`: resolves once with `resolveAll`, fails when any address is refused (unless `allowPrivate`), answers as asked (`options.all`). */
function guardedLookup({ allowPrivate, resolveAll = systemResolveAll }: GuardOptions) {
  return (hostname: string, options: { all?: boolean; family?: number | string }, callback: LookupCallback): void => {
    resolveAll(hostname, (error, found) => {
      if (error) return callback(error, []);
      const family = options.family === 6 || options.family === "IPv6" ? 6 : options.family === 4 || options.family === "IPv4" ? 4 : 0;
      const addresses = found.filter((a) => family === 0 || a.family === family);
      if (addresses.length === 0) return callback(codedError(`${hostname} has no address.`, "ENOTFOUND"), []);
      if (!allowPrivate && addresses.some((a) => isPrivateAddress(a.address))) {
        return callback(codedError(`${hostname} resolves to a loopback, private or link-local address.`, "EPRIVATEADDRESS"), []);
      }
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

/** A `fetch` for webhook deliveries on Node whose connections go only to addresses checked by `guardedLookup` (kept alive per origin). */
export function guardedWebhookFetch(options: GuardOptions): FetchFn {
  const agent = new Agent({ connect: { lookup: guardedLookup(options) } });
  return (input, init) => undiciFetch(input, { ...(init as Parameters<typeof undiciFetch>[1]), dispatcher: agent }) as unknown as Promise<Response>;
}
