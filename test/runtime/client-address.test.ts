/**
 * TRUST_PROXY parsing and the X-Forwarded-For hop rule of
 * src/runtime/node/client-address.ts (the server-level behaviour is in
 * server-lifecycle.test.ts).
 */
import { describe, expect, it } from "vitest";
import { nodeSettings } from "../../src/config";
import { forwardedClient } from "../../src/runtime/node/client-address";

const parseTrustProxy = (value: string | undefined) => nodeSettings({ TRUST_PROXY: value }).trustedProxies;

describe("TRUST_PROXY", () => {
  it.each([
    [undefined, 0],
    ["", 0],
    ["false", 0],
    ["0", 0],
    ["true", 1],
    ["1", 1],
    ["2", 2],
  ])("%j → %d", (value, hops) => expect(parseTrustProxy(value)).toBe(hops));

  it.each(["yes", "-1", "1.5", "100", "1 2"])("refuses %j with a message naming the variable", (value) => {
    expect(() => parseTrustProxy(value)).toThrow(/^Invalid configuration: TRUST_PROXY: must be false, true or a number of proxies \(0-99\), not "/);
  });
});

describe("forwardedClient", () => {
  it.each([
    ["198.51.100.1", 1, "198.51.100.1"],
    ["203.0.113.7, 198.51.100.1", 1, "198.51.100.1"],
    ["203.0.113.7, 198.51.100.1", 2, "203.0.113.7"],
    ["forged, 203.0.113.7,198.51.100.1", 2, "203.0.113.7"],
    ["2001:db8::1, 198.51.100.1", 2, "2001:db8::1"],
  ])("%j with %d trusted hop(s) → %s", (header, hops, client) => expect(forwardedClient(header, hops)).toBe(client));

  it.each([
    [undefined, 1],
    ["", 1],
    ["198.51.100.1", 2], // fewer entries than proxies: not through all of them
    ["not-an-ip, 198.51.100.1", 2],
    ["198.51.100.1", 0],
  ])("%j with %d hop(s) → none (the socket address is used)", (header, hops) => expect(forwardedClient(header, hops)).toBeUndefined());
});
