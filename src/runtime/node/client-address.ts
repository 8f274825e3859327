/**
 * The client's address on Node, for rate limits per client (docs/api.md#rate-limits).
 * Without trusted proxies (`TRUST_PROXY` unset) it is the socket's peer
 * address and `X-Forwarded-For` is ignored. With `TRUST_PROXY=n` it is the
 * n-th `X-Forwarded-For` entry from the right (the entries the trusted proxies
 * appended; RFC 7239 §5.2), falling back to the socket address when the list
 * is shorter or that entry is no IP address: Express's `trust proxy = n`
 * (https://expressjs.com/en/guide/behind-proxies.html).
 */
import type { IncomingMessage } from "node:http";
import { isIP } from "node:net";
import type { Context } from "hono";
import type { AppEnv, ClientIp } from "../../http/context";

/**
 * Parse `TRUST_PROXY`: unset, "", "false" → 0; "true" → 1; a whole number ≥ 0 as is.
 * @throws Error on any other value.
 */
export function parseTrustProxy(value: string | undefined): number {
  if (value === undefined || value === "" || value === "false") return 0;
  if (value === "true") return 1;
  if (/^\d{1,2}$/.test(value)) return Number(value);
  throw new Error(`Invalid configuration: TRUST_PROXY must be false, true or a number of proxies (0-99), got ${JSON.stringify(value)}`);
}

/**
 * The address `hops` proxies in front saw, from an `X-Forwarded-For` value
 * (`"client, proxy1, proxy2"`), or undefined when the list has fewer than
 * `hops` entries or that entry is not an IP address.
 */
export function forwardedClient(header: string | undefined, hops: number): string | undefined {
  if (!header || hops <= 0) return undefined;
  const list = header
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");
  const candidate = list[list.length - hops];
  return candidate !== undefined && isIP(candidate) !== 0 ? candidate : undefined;
}

/** `ClientIp` of the app: `socketAddress(c)` unless `hops` trusted proxies forward the request. */
export function clientAddress(hops: number, socketAddress: (c: Context<AppEnv>) => string | undefined): ClientIp {
  if (hops <= 0) return socketAddress;
  return (c) => forwardedClient(c.req.header("X-Forwarded-For"), hops) ?? socketAddress(c);
}

/** The same address for a request Node's HTTP server has not handed to the app yet. */
export function incomingClientAddress(hops: number): (req: IncomingMessage) => string | undefined {
  if (hops <= 0) return (req) => req.socket.remoteAddress;
  // Node joins repeated X-Forwarded-For lines with ", ", as the app sees them.
  return (req) => forwardedClient(String(req.headers["x-forwarded-for"] ?? ""), hops) ?? req.socket.remoteAddress;
}
