/**
 * Unknown API keys (docs/api.md; docs/architecture.md "Unknown API keys"):
 * an address whose unknown keys failed more than RATE_LIMIT_ANON_PER_MIN
 * lookups in a rolling minute gets 429 for further unknown keys, and a key it
 * guesses then costs no database statement (counted on the app's client,
 * test/support/round-trips.ts); a valid key from that address is still looked up
 * and served. The app runs over a real libSQL file with an injected clock and
 * client address (`X-Test-IP`).
 */
import { afterEach, describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { parseConfig } from "../../src/config";
import { countRoundTrips } from "../support/round-trips";
import { createOperatorKey, revokeKey } from "../../src/services/accounts.service";
import { nodeTarget, TEST_ENV, type NodeTarget } from "../support/node-target";
import { uniqueEmail } from "../scenarios/accounts.scenarios";

let target: NodeTarget | undefined;
afterEach(async () => {
  await target?.close();
  target = undefined;
});

const GUESSER = "192.0.2.66";
const randomKey = () => `psk_${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url")}`;

/** The app over a fresh database with RATE_LIMIT_ANON_PER_MIN=3, its statements counted, the clock moved by hand. */
async function setup() {
  const env = { RATE_LIMIT_ANON_PER_MIN: "3" };
  let ms = new Date("2026-11-22T10:00:10Z").getTime();
  target = await nodeTarget(env);
  const t = target;
  const counter = countRoundTrips(t.db);
  const app = createApp({
    db: counter.db,
    config: parseConfig({ ...TEST_ENV, ...env }),
    clock: () => new Date(ms),
    clientIp: (c) => c.req.header("x-test-ip"),
    log: () => {},
  });
  /** `GET /accounts/me` with `key` from `ip`: the response and the statements it cost. */
  const me = async (ip: string, key: string) => {
    counter.reset();
    const res = await app.request("http://localhost/accounts/me", { headers: { "X-Test-IP": ip, Authorization: `Bearer ${key}` } });
    await res.arrayBuffer();
    return { status: res.status, retryAfter: res.headers.get("retry-after"), statements: counter.count() };
  };
  /** Three failed lookups, then the fourth pauses the address; resolves with the statements of the fourth. */
  const pause = async () => {
    for (let i = 0; i < 3; i++) expect(await me(GUESSER, randomKey())).toMatchObject({ status: 401, statements: 1 });
    const fourth = await me(GUESSER, randomKey());
    expect(fourth).toMatchObject({ status: 429, retryAfter: "60" });
    return fourth.statements;
  };
  return { t, app, me, pause, advance: (seconds: number) => (ms += seconds * 1000), now: () => new Date(ms) };
}

describe("unknown keys past the address's limit", () => {
  it("get 429 without any database statement, while the pause lasts; after it, a lookup again", async () => {
    const { me, pause, advance } = await setup();
    const pausing = await pause();
    for (let i = 0; i < 50; i++) {
      expect(await me(GUESSER, randomKey()), `guess ${i + 1}`).toMatchObject({ status: 429, retryAfter: "1", statements: 0 });
    }
    // The request that began the pause paid for that: its failed lookup, and one read of the index of existing keys.
    expect(pausing).toBe(2);
    advance(0.5);
    expect(await me(GUESSER, randomKey())).toMatchObject({ status: 429, statements: 0 });
    // A second on, a guess costs one read of the keys created since (never the lookup of the key).
    advance(0.5);
    expect(await me(GUESSER, randomKey())).toMatchObject({ status: 429, statements: 1 });
    expect(await me(GUESSER, randomKey())).toMatchObject({ status: 429, statements: 0 });
    // Another address is not paused: its unknown key is looked up.
    expect(await me("192.0.2.67", randomKey())).toMatchObject({ status: 401, statements: 1 });
    advance(59);
    expect(await me(GUESSER, randomKey())).toMatchObject({ status: 401, statements: 1 });
  });
});

describe("a valid key from a paused address", () => {
  it("is served: one never used, one signed up through this process, one created by another process", async () => {
    const { t, app, me, pause, advance, now } = await setup();
    // Made before the pause, never used: the index read when the pause began holds it.
    const early = (await createOperatorKey(t.db, "customer", "early", now())).apiKey.key;
    await pause();
    // Each: the lookup of the key, and the account /accounts/me reads.
    expect(await me(GUESSER, t.staffKey)).toMatchObject({ status: 200, statements: 2 });
    expect(await me(GUESSER, early)).toMatchObject({ status: 200, statements: 2 });

    const signUp = await app.request("http://localhost/accounts", {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Test-IP": "192.0.2.90" },
      body: JSON.stringify({ name: "Paused", email: uniqueEmail("paused") }),
    });
    expect(signUp.status).toBe(201);
    const signedUp = ((await signUp.json()) as { apiKey: { key: string } }).apiKey.key;
    expect(await me(GUESSER, signedUp)).toMatchObject({ status: 200, statements: 2 });

    // Created by another process (straight into the database) a second later: found by one read of the new keys.
    advance(1);
    const elsewhere = (await createOperatorKey(t.db, "customer", "elsewhere", now())).apiKey.key;
    expect(await me(GUESSER, elsewhere)).toMatchObject({ status: 200, statements: 3 });
    expect(await me(GUESSER, elsewhere), "then cached: the account read only").toMatchObject({ status: 200, statements: 1 });
  });

  it("created elsewhere within the index's last second: 429 with Retry-After: 1, then served", async () => {
    const { t, me, pause, advance, now } = await setup();
    await pause();
    const fresh = (await createOperatorKey(t.db, "customer", "fresh", now())).apiKey.key;
    expect(await me(GUESSER, fresh)).toMatchObject({ status: 429, retryAfter: "1", statements: 0 });
    advance(1);
    expect(await me(GUESSER, fresh)).toMatchObject({ status: 200, statements: 3 });
  });

  it("a revoked key is looked up and refused like any unknown one", async () => {
    const { t, me, pause } = await setup();
    const revoked = await createOperatorKey(t.db, "customer", "revoked", new Date("2026-11-22T10:00:00Z"));
    await revokeKey(t.db, revoked.account.id, revoked.apiKey.id, new Date("2026-11-22T10:00:01Z"));
    await pause();
    expect(await me(GUESSER, revoked.apiKey.key)).toMatchObject({ status: 429, retryAfter: "60", statements: 1 });
    expect(await me(GUESSER, revoked.apiKey.key)).toMatchObject({ status: 429, statements: 0 });
  });
});
