/** The client's address on Node (docs/api.md#rate-limits): the socket's peer, or with `TRUST_PROXY=n` the n-th `X-Forwarded-For` entry from the right (RFC 7239 §5.2). */
import type { IncomingMessage } from "node:http";
import { isIP } from "node:net";
import type { Context } from "hono";
import type { AppEnv, ClientIp } from "../../http/context";

/** The entry `hops` from the right of an `X-Forwarded-For` value (`"client, proxy1, proxy2"`); undefined when the list is shorter or it is no IP address. */
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
