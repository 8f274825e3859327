/**
 * SSRF by host name (docs/api.md#events-and-webhooks, issue 17): on Node, a delivery's target name
 * is resolved when the connection is made, every address is checked, and the
 * socket connects to the address that was checked — no second lookup
 * (src/runtime/node/webhook-fetch.ts). The deliveries list shows a coarse
 * outcome, never raw error text.
 *
 * Names are resolved by an injected resolver (the `dns.lookup` stand-in the
 * runtime module takes), so the test does not depend on the machine's
 * /etc/hosts or on any DNS: `hooks.example.test` (RFC 6761 `.test`) resolves
 * only through it. A delivery that arrives at the loopback receiver therefore
 * went to the address the resolver returned.
 *
 * The Worker's guard (src/runtime/workers/webhook-fetch.ts) is checked here too,
 * over the Node dispatcher with the receiver as its `fetch`; the real Worker
 * refusing a name is test/worker/webhook-ssrf.test.ts.
 */
import type { LookupAddress } from "node:dns";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config";
import { guardedWebhookFetch, type ResolveAll } from "../../src/runtime/node/webhook-fetch";
import { workerWebhookFetch } from "../../src/runtime/workers/webhook-fetch";
import { isIpLiteralHost, isPrivateAddress, isPrivateHost } from "../../src/domain/private-address";
import { webhookTargetProblem } from "../../src/domain/webhook-target";
import type { FetchFn } from "../../src/services/webhooks/delivery";
import { dispatchDue } from "../../src/services/webhooks/dispatch";
import { connect } from "../support/client";
import { nodeTarget, TEST_ENV, type NodeTarget } from "../support/node-target";
import { Receiver } from "../support/webhook-receiver";
import { createCategory, expectValidationError } from "../scenarios/categories.scenarios";
import { subscribe, type DeliveryBody } from "../scenarios/webhooks.scenarios";

let receiver: Receiver;
beforeAll(async () => {
  receiver = await Receiver.start();
});
afterAll(async () => {
  await receiver?.close();
});
const targets: NodeTarget[] = [];
afterEach(async () => {
  while (targets.length) await targets.pop()!.close();
});

/** A resolver that knows `names` only (everything else: ENOTFOUND), counting its lookups. */
function resolver(names: Record<string, string[]>) {
  const lookups: string[] = [];
  const resolveAll: ResolveAll = (hostname, callback) => {
    lookups.push(hostname);
    const addresses = names[hostname];
    if (!addresses) {
      const error: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
      error.code = "ENOTFOUND";
      return setImmediate(() => callback(error, []));
    }
    setImmediate(() =>
      callback(
        null,
        addresses.map((address): LookupAddress => ({ address, family: address.includes(":") ? 6 : 4 })),
      ),
    );
  };
  return { lookups, resolveAll };
}

/**
 * Subscribe to `url` (accepted: a name is not resolved at subscription time),
 * write one event and run the dispatcher with `allowPrivate` and the resolver;
 * returns the delivery.
 */
async function deliverOnce(url: string, allowPrivate: boolean, resolveAll: ResolveAll): Promise<DeliveryBody> {
  const target = await nodeTarget({ WEBHOOKS_ALLOW_PRIVATE: "false" });
  targets.push(target);
  const api = await connect(target);
  const hook = await subscribe(api, target.staffKey, url, ["category.created"]);
  await createCategory(api, target.staffKey);
  const config = parseConfig({ ...TEST_ENV, WEBHOOKS_ALLOW_PRIVATE: String(allowPrivate), WEBHOOK_TIMEOUT_MS: "5000" });
  await dispatchDue(target.db, { config, now: () => new Date(), fetch: guardedWebhookFetch({ allowPrivate, resolveAll }) });
  const res = await api.get<DeliveryBody[]>(`/webhooks/${hook.id}/deliveries`, { key: target.staffKey });
  return res.body[0]!;
}

describe("webhook targets resolved at delivery time", () => {
  it("refuses a name that resolves to loopback: nothing is sent, the outcome is private_address", async () => {
    const dns = resolver({ "hooks.example.test": ["127.0.0.1"] });
    const port = new URL(receiver.url("/")).port;
    const delivery = await deliverOnce(`http://hooks.example.test:${port}/ssrf/loopback`, false, dns.resolveAll);
    expect(delivery).toMatchObject({ status: "pending", attempts: 1, lastError: "private_address" });
    expect(delivery.lastStatusCode).toBeUndefined();
    expect(receiver.at("/ssrf/loopback")).toHaveLength(0);
    expect(dns.lookups).toEqual(["hooks.example.test"]);
  });

  it("refuses a name with any private address among its answers (link-local metadata, RFC 1918, IPv6 ULA)", async () => {
    for (const addresses of [["93.184.216.34", "169.254.169.254"], ["10.1.2.3"], ["2606:4700::1111", "fd00::1"], ["::ffff:127.0.0.1"]]) {
      const dns = resolver({ "hooks.example.test": addresses });
      const delivery = await deliverOnce("http://hooks.example.test/ssrf/mixed", false, dns.resolveAll);
      expect(delivery.lastError, addresses.join(",")).toBe("private_address");
    }
  });

  it("connects to exactly the address it checked (one lookup per connection), when private targets are allowed", async () => {
    const dns = resolver({ "hooks.example.test": ["127.0.0.1"] });
    const port = new URL(receiver.url("/")).port;
    const delivery = await deliverOnce(`http://hooks.example.test:${port}/ssrf/allowed`, true, dns.resolveAll);
    expect(delivery).toMatchObject({ status: "delivered", attempts: 1, lastStatusCode: 204 });
    const [received] = receiver.at("/ssrf/allowed");
    expect(received!.headers.host).toBe(`hooks.example.test:${port}`);
    expect(dns.lookups).toEqual(["hooks.example.test"]);
  });

  it("shows coarse outcomes: dns for a name that does not resolve, refused for a closed port", async () => {
    const dns = resolver({ "closed.example.test": ["127.0.0.1"] });
    expect((await deliverOnce("http://nowhere.example.test/ssrf/dns", true, dns.resolveAll)).lastError).toBe("dns");
    const closed = await Receiver.start();
    const port = new URL(closed.url("/")).port;
    await closed.close();
    expect((await deliverOnce(`http://closed.example.test:${port}/ssrf/refused`, true, dns.resolveAll)).lastError).toBe("refused");
  });

  it("isPrivateAddress classifies resolved addresses", () => {
    for (const a of [
      "127.0.0.1",
      "10.0.0.1",
      "169.254.169.254",
      "192.168.1.1",
      "100.64.0.1",
      "::1",
      "fe80::1%eth0",
      "fd12::1",
      "::ffff:10.0.0.1",
      "0.0.0.0",
      "garbage",
    ]) {
      expect(isPrivateAddress(a), a).toBe(true);
    }
    for (const a of ["93.184.216.34", "2606:4700::1111", "8.8.8.8"]) expect(isPrivateAddress(a), a).toBe(false);
  });
});

/**
 * IPv6 forms that embed an IPv4 address, and port 0: refused as targets.
 * Each row: the URL, and the address as DNS would return it (undefined: not an address).
 */
const REFUSED_TARGETS: [what: string, url: string, address: string | undefined][] = [
  ["IPv4-translated loopback (RFC 2765, ::ffff:0:0/96)", "http://[::ffff:0:127.0.0.1]/hook", "::ffff:0:127.0.0.1"],
  ["IPv4-translated RFC 1918 (RFC 2765)", "http://[::ffff:0:10.1.2.3]/hook", "::ffff:0:a01:203"],
  ["local-use NAT64 of a private IPv4 (RFC 8215, 64:ff9b:1::/48)", "http://[64:ff9b:1::a00:1]/hook", "64:ff9b:1::a00:1"],
  ["local-use NAT64 of a public IPv4 (the whole /48)", "http://[64:ff9b:1:ffff::808:808]/hook", "64:ff9b:1:ffff::808:808"],
  ["Teredo (RFC 4380, 2001::/32)", "http://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/hook", "2001:0:4136:e378:8000:63bf:f5ff:fffe"],
  ["Teredo, compressed", "http://[2001::1]/hook", "2001::1"],
  ["port 0 of a public address", "http://93.184.216.34:0/hook", undefined],
  ["port 0 of a public name", "https://example.com:0/hook", undefined],
];

/** POST /webhooks with target `url` on an app that refuses private targets: 400 validation_error on body.url, "not allowed". */
async function expectTargetRefused(url: string): Promise<void> {
  const target = await nodeTarget({ WEBHOOKS_ALLOW_PRIVATE: "false" });
  targets.push(target);
  const api = await connect(target);
  const res = await api.post("/webhooks", { url, events: ["*"] }, { key: target.staffKey });
  expectValidationError(res, ["body.url"]);
  expect(res.body.details[0].message).toMatch(/not allowed/);
}

describe("webhook targets that embed an IPv4 address or name port 0", () => {
  it.each(REFUSED_TARGETS)("%s: POST /webhooks is 400 validation_error on body.url", async (_what, url, address) => {
    await expectTargetRefused(url);
    if (address !== undefined) {
      expect(isPrivateHost(new URL(url).hostname), url).toBe(true);
      expect(isPrivateAddress(address), address).toBe(true);
    }
  });

  it("public IPv6 neighbours of those ranges are still accepted", async () => {
    const target = await nodeTarget({ WEBHOOKS_ALLOW_PRIVATE: "false" });
    targets.push(target);
    const api = await connect(target);
    for (const url of [
      "http://[64:ff9b:2::a00:1]/",
      "http://[2001:4860::8888]/",
      "http://[2001:200::1]/",
      "http://[::ffff:1:a00:1]/",
      "https://example.com:8443/",
    ]) {
      expect((await api.post("/webhooks", { url, events: ["*"] }, { key: target.staffKey })).status, url).toBe(201);
    }
  });
});

/**
 * Only global unicast is a target (IANA IPv4 and IPv6 Special-Purpose Address Registries, classified with ipaddr.js).
 * Each row: what, the URL, and the address as DNS would return it; the hand-written parser accepted them all.
 */
const NOT_GLOBAL_UNICAST: [what: string, url: string, address: string][] = [
  ["TEST-NET-1 documentation (RFC 5737, 192.0.2.0/24)", "http://192.0.2.10/hook", "192.0.2.10"],
  ["TEST-NET-2 documentation (RFC 5737, 198.51.100.0/24)", "https://198.51.100.7/hook", "198.51.100.7"],
  ["TEST-NET-3 documentation (RFC 5737, 203.0.113.0/24)", "http://203.0.113.255:8080/hook", "203.0.113.255"],
  ["discard-only (RFC 6666, 100::/64)", "http://[100::1]/hook", "100::1"],
  ["dummy prefix (RFC 9780, 100:0:0:1::/64)", "http://[100:0:0:1::1]/hook", "100:0:0:1::1"],
  ["documentation (RFC 3849, 2001:db8::/32)", "http://[2001:db8::1]/hook", "2001:db8::1"],
  ["documentation (RFC 9637, 3fff::/20)", "http://[3fff:fff::1]/hook", "3fff:fff::1"],
  ["SRv6 SIDs (RFC 9602, 5f00::/16)", "http://[5f00::1]/hook", "5f00::1"],
  ["ORCHID, deprecated (RFC 4843, 2001:10::/28)", "http://[2001:10::1]/hook", "2001:10::1"],
  ["ORCHIDv2 (RFC 7343, 2001:20::/28)", "http://[2001:2f::1]/hook", "2001:2f::1"],
  ["IPv4-mapped documentation address", "http://[::ffff:192.0.2.1]/hook", "::ffff:c000:201"],
  ["6to4 of a documentation address", "http://[2002:cb00:7101::1]/hook", "2002:cb00:7101::1"],
];

describe("webhook targets that are not global unicast", () => {
  it.each(NOT_GLOBAL_UNICAST)("%s: POST /webhooks is 400 validation_error on body.url", async (_what, url) => {
    await expectTargetRefused(url);
  });

  it("isPrivateHost and isPrivateAddress refuse those ranges and the IETF protocol block 2001::/23 whole, and keep public neighbours", () => {
    const refused = [...NOT_GLOBAL_UNICAST.map(([, url, address]) => [new URL(url).hostname, address]), ["[2001:1::1]", "2001:1::1"]];
    for (const [host, address] of refused) {
      expect(isPrivateHost(host!), host).toBe(true);
      expect(isPrivateAddress(address!), address).toBe(true);
    }
    const accepted = ["8.8.8.8", "1.1.1.1", "192.0.3.1", "198.51.101.1", "203.0.112.255", "2606:4700::1111", "2001:db9::1", "3fff:1000::1", "2001:200::1"];
    for (const address of accepted) {
      expect(isPrivateHost(new URL(`http://${address.includes(":") ? `[${address}]` : address}/`).hostname), address).toBe(false);
      expect(isPrivateAddress(address), address).toBe(false);
    }
  });

  it("webhookTargetProblem refuses a URL whose text names no host (WHATWG URL would take the path for the host)", () => {
    for (const url of ["http:///x", "https:///x/y", "http:x", "http:/x", "http://\t/x", "http:\\\\x"]) {
      expect(webhookTargetProblem(url, { allowPrivate: true }), url).toBe("The URL must name a host.");
    }
    for (const url of ["http://x/", " https://example.com/hook ", "http://@example.com/"]) {
      expect(webhookTargetProblem(url, { allowPrivate: false }), url).toBeUndefined();
    }
    expect(webhookTargetProblem("ftp:///x", { allowPrivate: true })).toBe("Only http and https URLs are allowed.");
    expect(webhookTargetProblem("http://[2001:db8::1]/", { allowPrivate: false })).toMatch(/not allowed/);
    expect(webhookTargetProblem("http://[2001:db8::1]/", { allowPrivate: true })).toBeUndefined();
  });

  it("http:///x: POST /webhooks is 400 validation_error on body.url", async () => {
    const target = await nodeTarget({ WEBHOOKS_ALLOW_PRIVATE: "false" });
    targets.push(target);
    const api = await connect(target);
    const res = await api.post("/webhooks", { url: "http:///x", events: ["*"] }, { key: target.staffKey });
    expectValidationError(res, ["body.url"]);
    expect(res.body.details[0].message).toBe("The URL must name a host.");
  });
});

describe("the Worker's webhook fetch (WEBHOOKS_EGRESS)", () => {
  /** A `fetch` that records each URL and passes it on to the real one. */
  function recording() {
    const urls: string[] = [];
    const send: FetchFn = (input, init) => {
      urls.push(input);
      return fetch(input, init);
    };
    return { urls, send };
  }

  /** Subscribe to `url`, write one event, and run the dispatcher with `send`; returns the delivery. */
  async function deliverWith(url: string, send: FetchFn): Promise<DeliveryBody> {
    const target = await nodeTarget({ WEBHOOKS_ALLOW_PRIVATE: "true" });
    targets.push(target);
    const api = await connect(target);
    const hook = await subscribe(api, target.staffKey, url, ["category.created"]);
    await createCategory(api, target.staffKey);
    const config = parseConfig({ ...TEST_ENV, WEBHOOKS_ALLOW_PRIVATE: "false", WEBHOOK_TIMEOUT_MS: "5000" });
    await dispatchDue(target.db, { config, now: () => new Date(), fetch: send });
    return (await api.get<DeliveryBody[]>(`/webhooks/${hook.id}/deliveries`, { key: target.staffKey })).body[0]!;
  }

  it("egress host: a target named by a host name is refused before any connection (private_address)", async () => {
    const { urls, send } = recording();
    const port = new URL(receiver.url("/")).port;
    const delivery = await deliverWith(
      `http://hooks.example.test:${port}/worker/name`,
      workerWebhookFetch({ egress: "host", allowPrivate: false, fetch: send }),
    );
    expect(delivery).toMatchObject({ status: "pending", attempts: 1, lastError: "private_address" });
    expect(urls).toEqual([]);
    // A trailing dot or letter case makes no IP literal of a name.
    const guarded = workerWebhookFetch({ egress: "host", allowPrivate: false, fetch: send });
    for (const url of ["http://hooks.example.test./", "https://EXAMPLE.com/", "http://0x7f.1.example/"]) {
      await expect(guarded(url, {}), url).rejects.toMatchObject({ code: "EPRIVATEADDRESS" });
    }
    expect(urls).toEqual([]);
  });

  it("egress host: IP literals are sent (the delivery judges them: a private one is refused before fetch)", async () => {
    const { urls, send } = recording();
    const guarded = workerWebhookFetch({ egress: "host", allowPrivate: false, fetch: send });
    const delivery = await deliverWith(receiver.url("/worker/literal"), guarded);
    expect(delivery.lastError).toBe("private_address");
    expect(urls).toEqual([]);
    await expect(guarded(receiver.url("/worker/literal-direct"), { method: "POST" })).resolves.toMatchObject({ status: 204 });
    expect(urls).toEqual([receiver.url("/worker/literal-direct")]);
    for (const host of ["93.184.216.34", "[2606:4700::1111]", "127.0.0.1"]) expect(isIpLiteralHost(new URL(`http://${host}/`).hostname), host).toBe(true);
    for (const host of ["example.com", "vm", "localhost", "1.2.3.4.nip.io"]) expect(isIpLiteralHost(new URL(`http://${host}/`).hostname), host).toBe(false);
  });

  it("egress public, or private targets allowed: names are sent as they are", () => {
    const { send } = recording();
    expect(workerWebhookFetch({ egress: "public", allowPrivate: false, fetch: send })).toBe(send);
    expect(workerWebhookFetch({ egress: "host", allowPrivate: true, fetch: send })).toBe(send);
  });

  it("WEBHOOKS_EGRESS defaults to host and accepts only public or host", () => {
    expect(parseConfig({}).webhooks.egress).toBe("host");
    expect(parseConfig({ WEBHOOKS_EGRESS: "public" }).webhooks.egress).toBe("public");
    expect(() => parseConfig({ WEBHOOKS_EGRESS: "cloudflare" })).toThrow(/WEBHOOKS_EGRESS/);
  });
});
