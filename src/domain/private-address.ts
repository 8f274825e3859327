/** Private-address policy of webhook targets (docs/webhooks.md#targets): only global unicast (RFC 6890, RFC 8190); `localhost` is refused. */
import ipaddr from "ipaddr.js";

/** IANA IPv6 special-purpose blocks that ipaddr.js leaves as "unicast": the dummy prefix (RFC 9780). */
const UNNAMED_SPECIAL_V6 = [ipaddr.IPv6.parseCIDR("100:0:0:1::/64")];

/** IPv6 blocks carrying an IPv4 address, and its first group: mapped, translated, compatible (RFC 4291), NAT64 (RFC 6052), 6to4 (RFC 3056). */
const EMBEDDING_V6: [block: [ipaddr.IPv6, number], group: number][] = [
  [ipaddr.IPv6.parseCIDR("::ffff:0:0/96"), 6],
  [ipaddr.IPv6.parseCIDR("::ffff:0:0:0/96"), 6],
  [ipaddr.IPv6.parseCIDR("::/96"), 6],
  [ipaddr.IPv6.parseCIDR("64:ff9b::/96"), 6],
  [ipaddr.IPv6.parseCIDR("2002::/16"), 1],
];

/** Whether ipaddr.js names no special range for `address`. */
function isGlobalV4(address: ipaddr.IPv4): boolean {
  return address.range() === "unicast";
}

/** Whether `address`, or the IPv4 address it carries, is global unicast. */
function isGlobalV6(address: ipaddr.IPv6): boolean {
  const embedding = EMBEDDING_V6.find(([block]) => address.match(block));
  if (embedding) {
    const [hi, lo] = [address.parts[embedding[1]]!, address.parts[embedding[1] + 1]!];
    return isGlobalV4(new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]));
  }
  return address.range() === "unicast" && !UNNAMED_SPECIAL_V6.some((block) => address.match(block));
}

/** True when IPv6 text (no brackets, no zone) does not parse or is not global unicast. */
function isPrivateV6(text: string): boolean {
  return !ipaddr.IPv6.isValid(text) || text.includes("%") || !isGlobalV6(ipaddr.IPv6.parse(text));
}

/** A dotted quad in decimal (`URL.hostname`'s form of IPv4) as an address, or undefined. */
function parseV4(text: string): ipaddr.IPv4 | undefined {
  return ipaddr.IPv4.isValidFourPartDecimal(text) ? ipaddr.IPv4.parse(text) : undefined;
}

/** True when `hostname` (`URL.hostname`) is `localhost`, `*.localhost` (RFC 6761 §6.3) or an IP literal not global unicast (docs/webhooks.md#targets). */
export function isPrivateHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/\.$/, "");
  if (host === "localhost" || host.endsWith(".localhost")) return true;
  if (host.startsWith("[") && host.endsWith("]")) return isPrivateV6(host.slice(1, -1));
  const v4 = parseV4(host);
  return v4 !== undefined && !isGlobalV4(v4);
}

/** True when `hostname` (`URL.hostname`, as WHATWG URL serializes hosts) is an IP address (dotted quad, or IPv6 in brackets), not a name. */
export function isIpLiteralHost(hostname: string): boolean {
  if (hostname.startsWith("[") && hostname.endsWith("]")) return true;
  return parseV4(hostname) !== undefined;
}

/** True when a resolved `address` (dotted IPv4, or IPv6 maybe with `%zone`) does not parse or is not global unicast (docs/webhooks.md#targets). */
export function isPrivateAddress(address: string): boolean {
  if (address.includes(":")) return isPrivateV6(address.replace(/%.*$/, ""));
  const v4 = parseV4(address);
  return v4 === undefined || !isGlobalV4(v4);
}
