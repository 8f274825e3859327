/**
 * Private-address policy of webhook targets (docs/webhooks.md#targets): whether a URL host or a resolved address is loopback,
 * private, link-local, unspecified, CGNAT, multicast or reserved (RFC 6890; RFC 4291 §2.2 text forms; RFC 6761 §6.3 `localhost`).
 */

/** IPv4 dotted quad → 32-bit number, or undefined. */
function parseIPv4(text: string): number | undefined {
  const parts = text.split(".");
  if (parts.length !== 4) return undefined;
  let value = 0;
  for (const part of parts) {
    if (!/^[0-9]{1,3}$/.test(part) || Number(part) > 255) return undefined;
    value = value * 256 + Number(part);
  }
  return value;
}

/** IPv6 text (no brackets, no zone) → 8 groups of 16 bits, or undefined. */
function parseIPv6(text: string): number[] | undefined {
  let hex = text;
  if (hex.includes(".")) {
    // A trailing dotted quad stands for the last two groups (RFC 4291 §2.2).
    const lastColon = hex.lastIndexOf(":");
    const v4 = parseIPv4(hex.slice(lastColon + 1));
    if (v4 === undefined) return undefined;
    hex = `${hex.slice(0, lastColon + 1)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const halves = hex.split("::");
  if (halves.length > 2) return undefined;
  const parse = (s: string) => (s === "" ? [] : s.split(":").map((g) => (/^[0-9a-f]{1,4}$/i.test(g) ? parseInt(g, 16) : NaN)));
  const left = parse(halves[0]!);
  const right = halves.length === 2 ? parse(halves[1]!) : [];
  if ([...left, ...right].some(Number.isNaN)) return undefined;
  const explicit = left.length + right.length;
  if (halves.length === 1 ? explicit !== 8 : explicit > 7) return undefined;
  return [...left, ...Array<number>(8 - explicit).fill(0), ...right];
}

/** CIDR blocks of IPv4 that are not public unicast destinations (RFC 6890 and friends). */
const PRIVATE_V4: [base: string, bits: number][] = [
  ["0.0.0.0", 8], // "this network", unspecified
  ["10.0.0.0", 8], // private (RFC 1918)
  ["100.64.0.0", 10], // shared address space, CGNAT (RFC 6598)
  ["127.0.0.0", 8], // loopback
  ["169.254.0.0", 16], // link-local, cloud metadata endpoints
  ["172.16.0.0", 12], // private (RFC 1918)
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.168.0.0", 16], // private (RFC 1918)
  ["198.18.0.0", 15], // benchmarking
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, broadcast
];

/** The blocks of `PRIVATE_V4` as [first address, size]. */
const PRIVATE_V4_RANGES = PRIVATE_V4.map(([base, bits]) => [parseIPv4(base)!, 2 ** (32 - bits)] as const);

function isPrivateV4(address: number): boolean {
  return PRIVATE_V4_RANGES.some(([start, size]) => address >= start && address < start + size);
}

function isPrivateV6(g: number[]): boolean {
  const embeddedV4 = (hi: number, lo: number) => isPrivateV4(hi * 65536 + lo);
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 8)) return true; // :: unspecified
  if (zeros(0, 7) && g[7] === 1) return true; // ::1 loopback
  if (zeros(0, 5) && g[5] === 0xffff) return embeddedV4(g[6]!, g[7]!); // ::ffff:a.b.c.d mapped
  if (zeros(0, 4) && g[4] === 0xffff && g[5] === 0) return embeddedV4(g[6]!, g[7]!); // ::ffff:0:a.b.c.d translated (RFC 2765)
  if (zeros(0, 6)) return embeddedV4(g[6]!, g[7]!); // ::a.b.c.d compatible (deprecated)
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return embeddedV4(g[6]!, g[7]!); // NAT64 (RFC 6052)
  if (g[0] === 0x64 && g[1] === 0xff9b && g[2] === 1) return true; // 64:ff9b:1::/48 local-use NAT64 (RFC 8215)
  if (g[0] === 0x2001 && g[1] === 0) return true; // 2001::/32 Teredo (RFC 4380): the client's IPv4 is obfuscated
  if (g[0] === 0x2002) return embeddedV4(g[1]!, g[2]!); // 6to4
  const first = g[0]!;
  if ((first & 0xfe00) === 0xfc00) return true; // fc00::/7 unique local
  if ((first & 0xffc0) === 0xfe80) return true; // fe80::/10 link-local
  if ((first & 0xffc0) === 0xfec0) return true; // fec0::/10 site-local (deprecated)
  if ((first & 0xff00) === 0xff00) return true; // multicast
  return false;
}

/**
 * True when `hostname` (`URL.hostname`: IPv4 as a dotted quad, IPv6 in brackets) is a non-public address or `localhost` /
 * `*.localhost` (RFC 6761 §6.3); other names are not resolved: false.
 */
export function isPrivateHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/\.$/, "");
  if (host === "localhost" || host.endsWith(".localhost")) return true;
  if (host.startsWith("[") && host.endsWith("]")) {
    const groups = parseIPv6(host.slice(1, -1));
    return groups === undefined ? true : isPrivateV6(groups);
  }
  const v4 = parseIPv4(host);
  return v4 !== undefined && isPrivateV4(v4);
}

/** True when `hostname` (`URL.hostname`) is an IP address (a dotted quad, or IPv6 in brackets) rather than a name to resolve. */
export function isIpLiteralHost(hostname: string): boolean {
  if (hostname.startsWith("[") && hostname.endsWith("]")) return true;
  return parseIPv4(hostname) !== undefined;
}

/** True when a resolved `address` (dotted IPv4, or IPv6 without brackets, maybe with `%zone`) is in the ranges of `isPrivateHost`, or does not parse. */
export function isPrivateAddress(address: string): boolean {
  if (address.includes(":")) {
    const groups = parseIPv6(address.replace(/%.*$/, ""));
    return groups === undefined ? true : isPrivateV6(groups);
  }
  const v4 = parseIPv4(address);
  return v4 === undefined ? true : isPrivateV4(v4);
}
