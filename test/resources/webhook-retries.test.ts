/**
 * Failed webhook deliveries and their retries on Node (docs/api.md#events-and-webhooks, issue 6):
 * a receiver that fails three times then recovers; one that never recovers
 * ends `failing` without blocking another subscription (nor its own later
 * events); redirects, timeouts and refused connections are failed attempts;
 * concurrent dispatchers send each attempt once; the backoff schedule. A real
 * receiver on a loopback port verifies every delivery, and the test drives
 * `dispatchDue` with an injected clock (test/support/webhook-harness.ts):
 * retries become due by moving the clock, not by waiting.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { backoffDelayMs } from "../../src/domain/backoff";
import { BASE_MS, CAP_MS, harness, MAX_ATTEMPTS, type Harness } from "../support/webhook-harness";
import { createCategory } from "../scenarios/categories.scenarios";
import { subscribe } from "../scenarios/webhooks.scenarios";
import { Receiver, verified } from "../support/webhook-receiver";

let receiver: Receiver;
beforeAll(async () => {
  receiver = await Receiver.start();
});
afterAll(async () => {
  await receiver?.close();
});

let h: Harness;
let path: string;
let counter = 0;
beforeEach(async () => {
  h = await harness();
  counter += 1;
  path = `/t${counter}`;
});
afterEach(async () => {
  await h?.target.close();
});

describe("webhook delivery", () => {
  it("retries a receiver that fails three times, then delivers — and holds later events back until then", async () => {
    receiver.on(`${path}/flaky`, (n) => (n <= 3 ? 503 : 200));
    const hook = await subscribe(h.api, h.key, receiver.url(`${path}/flaky`), ["category.created"]);
    const a = await createCategory(h.api, h.key);
    const b = await createCategory(h.api, h.key);

    expect(await h.dispatch()).toMatchObject({ queued: 2, attempted: 1, retried: 1 });
    let [first, second] = await h.deliveries(hook.id);
    expect(first).toMatchObject({ eventType: "category.created", status: "pending", attempts: 1, lastStatusCode: 503, lastError: "http_status" });
    expect(second).toMatchObject({ status: "pending", attempts: 0 });
    // Backoff after attempt 1: between half and all of the base delay (equal jitter).
    const delay = Date.parse(first!.nextAttemptAt!) - Date.parse(first!.lastAttemptAt!);
    expect(delay).toBeGreaterThanOrEqual(BASE_MS / 2);
    expect(delay).toBeLessThanOrEqual(BASE_MS);

    // Not due yet: nothing is sent, in particular not the second event.
    expect(await h.dispatch()).toMatchObject({ attempted: 0 });

    for (let round = 0; round < 3; round++) {
      h.advance(CAP_MS);
      await h.dispatch();
    }
    [first, second] = await h.deliveries(hook.id);
    expect(first).toMatchObject({ status: "delivered", attempts: 4, lastStatusCode: 200 });
    expect(second).toMatchObject({ status: "delivered", attempts: 1, lastStatusCode: 200 });
    expect(first!.lastError).toBeUndefined();

    const log = receiver.at(`${path}/flaky`);
    expect(log.map((r) => [verified(r, hook.secret).data.id, r.status])).toEqual([
      [a.id, 503],
      [a.id, 503],
      [a.id, 503],
      [a.id, 200],
      [b.id, 200],
    ]);
    // Same message id on every retry (receivers dedupe on it), a fresh timestamp per attempt.
    expect(new Set(log.slice(0, 4).map((r) => r.headers["webhook-id"])).size).toBe(1);
    const stamps = log.map((r) => Number(r.headers["webhook-timestamp"]));
    expect(stamps).toEqual([...stamps].sort((x, y) => x - y));
    expect(stamps[3]).toBeGreaterThan(stamps[0]!);
    expect((await h.webhook(hook.id)).status).toBe("active");
  });

  it("gives up on a receiver that never recovers: `failing`, other subscriptions unaffected, its later events still flow", async () => {
    receiver.on(`${path}/down`, () => 500);
    const down = await subscribe(h.api, h.key, receiver.url(`${path}/down`), ["category.created"]);
    const ok = await subscribe(h.api, h.key, receiver.url(`${path}/ok`), ["category.created"]);
    const a = await createCategory(h.api, h.key);
    const b = await createCategory(h.api, h.key);

    await h.dispatch();
    // The healthy subscription has everything after the first run, while the other one is still retrying.
    expect(receiver.at(`${path}/ok`).map((r) => verified(r, ok.secret).data.id)).toEqual([a.id, b.id]);
    expect(receiver.at(`${path}/down`)).toHaveLength(1);

    let rounds = 0;
    while ((await h.deliveries(down.id))[0]!.status === "pending") {
      h.advance(CAP_MS);
      await h.dispatch();
      expect(++rounds).toBeLessThan(10);
    }
    const [gaveUp, next] = await h.deliveries(down.id);
    expect(gaveUp).toMatchObject({ eventId: expect.any(Number), status: "failed", attempts: MAX_ATTEMPTS, lastStatusCode: 500 });
    expect(gaveUp!.nextAttemptAt).toBeUndefined();
    expect(next).toMatchObject({ status: "pending", attempts: 1 });
    expect(await h.webhook(down.id)).toMatchObject({ status: "failing" });
    expect(await h.webhook(ok.id)).toMatchObject({ status: "active" });
    // In order: event b was first tried only after a was given up.
    expect(receiver.at(`${path}/down`).map((r) => verified(r, down.secret).data.id)).toEqual([a.id, a.id, a.id, a.id, b.id]);
    expect((await h.api.get(`/webhooks/${down.id}/deliveries?status=failed`, { key: h.key })).body).toEqual([gaveUp]);

    // The receiver comes back: the next delivery succeeds and the subscription is active again.
    receiver.on(`${path}/down`, () => 200);
    h.advance(CAP_MS);
    expect(await h.dispatch()).toMatchObject({ delivered: 1 });
    expect(await h.webhook(down.id)).toMatchObject({ status: "active" });
    expect((await h.deliveries(down.id)).map((d) => d.status)).toEqual(["failed", "delivered"]);
    expect(receiver.at(`${path}/ok`)).toHaveLength(2);
  });

  it("counts a redirect as a failed attempt and does not follow it", async () => {
    receiver.on(`${path}/moved`, () => 302);
    const hook = await subscribe(h.api, h.key, receiver.url(`${path}/moved`));
    await createCategory(h.api, h.key);
    expect(await h.dispatch()).toMatchObject({ attempted: 1, retried: 1 });
    expect((await h.deliveries(hook.id))[0]).toMatchObject({ status: "pending", lastStatusCode: 302 });
    expect(receiver.at("/elsewhere")).toHaveLength(0);
  });

  it("counts a receiver that does not answer in time as a failed attempt", async () => {
    await h.target.close();
    h = await harness({ WEBHOOK_TIMEOUT_MS: "200" });
    receiver.on(`${path}/hang`, () => "hang");
    const hook = await subscribe(h.api, h.key, receiver.url(`${path}/hang`));
    await createCategory(h.api, h.key);
    expect(await h.dispatch()).toMatchObject({ attempted: 1, retried: 1 });
    const [delivery] = await h.deliveries(hook.id);
    expect(delivery).toMatchObject({ status: "pending", attempts: 1, lastError: "timeout" });
    expect(delivery!.lastStatusCode).toBeUndefined();
  });

  it("records a refused connection as a failed attempt", async () => {
    const closed = await Receiver.start();
    const url = closed.url("/gone");
    await closed.close();
    const hook = await subscribe(h.api, h.key, url);
    await createCategory(h.api, h.key);
    expect(await h.dispatch()).toMatchObject({ attempted: 1, retried: 1 });
    // A coarse outcome, never the raw error text (which would map internal ports).
    expect((await h.deliveries(hook.id))[0]!.lastError).toBe("refused");
  });

  it("sends each attempt once when several dispatchers run at the same time", async () => {
    receiver.on(`${path}/race`, (n) => (n === 1 ? 503 : 204));
    const hook = await subscribe(h.api, h.key, receiver.url(`${path}/race`));
    const categories = [];
    for (let i = 0; i < 5; i++) categories.push(await createCategory(h.api, h.key));
    // First run: the deliveries exist and the first one is waiting for its retry.
    expect(await h.dispatch()).toMatchObject({ queued: 5, attempted: 1, retried: 1 });
    h.advance(CAP_MS);
    // Three dispatchers see the same due head at once; only one may claim it.
    const reports = await Promise.all([h.dispatch(), h.dispatch(), h.dispatch()]);
    expect(reports.reduce((n, r) => n + r.attempted, 0)).toBe(5);
    expect(receiver.at(`${path}/race`).map((r) => verified(r, hook.secret).data.id)).toEqual([categories[0]!.id, ...categories.map((c) => c.id)]);
  });
});

describe("retry schedule", () => {
  it("grows exponentially from the base, with equal jitter, up to the cap", () => {
    expect([1, 2, 3, 4, 5].map((n) => backoffDelayMs(n, 1000, 10_000, () => 0))).toEqual([500, 1000, 2000, 4000, 5000]);
    expect([1, 2, 3, 4, 5].map((n) => backoffDelayMs(n, 1000, 10_000, () => 0.999999))).toEqual([1000, 2000, 4000, 8000, 10_000]);
    expect(backoffDelayMs(200, 1000, 10_000, () => 0.5)).toBe(7500);
  });
});
