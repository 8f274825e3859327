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
import { describe, expect, it } from "vitest";
import { backoffDelayMs } from "../../src/domain/backoff";
import { BASE_MS, CAP_MS, harness, MAX_ATTEMPTS, useDeliveryRig } from "../support/webhook-harness";
import { createCategory } from "../scenarios/categories.scenarios";
import { subscribe } from "../scenarios/webhooks.scenarios";
import { Receiver, verified } from "../support/webhook-receiver";

const rig = useDeliveryRig();

describe("webhook delivery", () => {
  it("retries a receiver that fails three times, then delivers — and holds later events back until then", async () => {
    rig.receiver.on(`${rig.path}/flaky`, (n) => (n <= 3 ? 503 : 200));
    const hook = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(`${rig.path}/flaky`), ["category.created"]);
    const a = await createCategory(rig.h.api, rig.h.key);
    const b = await createCategory(rig.h.api, rig.h.key);

    expect(await rig.h.dispatch()).toMatchObject({ attempted: 1, retried: 1 });
    let [first, second] = await rig.h.deliveries(hook.id);
    expect(first).toMatchObject({ eventType: "category.created", status: "pending", attempts: 1, lastStatusCode: 503, lastError: "http_status" });
    // The log holds a delivery from its first attempt: event b waits behind a, not yet a row.
    expect(second).toBeUndefined();
    // Backoff after attempt 1: between half and all of the base delay (equal jitter).
    const delay = Date.parse(first!.nextAttemptAt!) - Date.parse(first!.lastAttemptAt!);
    expect(delay).toBeGreaterThanOrEqual(BASE_MS / 2);
    expect(delay).toBeLessThanOrEqual(BASE_MS);

    // Not due yet: nothing is sent, in particular not the second event.
    expect(await rig.h.dispatch()).toMatchObject({ attempted: 0 });

    for (let round = 0; round < 3; round++) {
      rig.h.advance(CAP_MS);
      await rig.h.dispatch();
    }
    [first, second] = await rig.h.deliveries(hook.id);
    expect(first).toMatchObject({ status: "delivered", attempts: 4, lastStatusCode: 200 });
    expect(second).toMatchObject({ status: "delivered", attempts: 1, lastStatusCode: 200 });
    expect(first!.lastError).toBeUndefined();

    const log = rig.receiver.at(`${rig.path}/flaky`);
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
    expect((await rig.h.webhook(hook.id)).status).toBe("active");
  });

  it("gives up on a receiver that never recovers: `failing`, other subscriptions unaffected, its later events still flow", async () => {
    rig.receiver.on(`${rig.path}/down`, () => 500);
    const down = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(`${rig.path}/down`), ["category.created"]);
    const ok = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(`${rig.path}/ok`), ["category.created"]);
    const a = await createCategory(rig.h.api, rig.h.key);
    const b = await createCategory(rig.h.api, rig.h.key);

    await rig.h.dispatch();
    // The healthy subscription has everything after the first run, while the other one is still retrying.
    expect(rig.receiver.at(`${rig.path}/ok`).map((r) => verified(r, ok.secret).data.id)).toEqual([a.id, b.id]);
    expect(rig.receiver.at(`${rig.path}/down`)).toHaveLength(1);

    let rounds = 0;
    while ((await rig.h.deliveries(down.id))[0]!.status === "pending") {
      rig.h.advance(CAP_MS);
      await rig.h.dispatch();
      expect(++rounds).toBeLessThan(10);
    }
    const [gaveUp, next] = await rig.h.deliveries(down.id);
    expect(gaveUp).toMatchObject({ eventId: expect.any(Number), status: "failed", attempts: MAX_ATTEMPTS, lastStatusCode: 500 });
    expect(gaveUp!.nextAttemptAt).toBeUndefined();
    expect(next).toMatchObject({ status: "pending", attempts: 1 });
    expect(await rig.h.webhook(down.id)).toMatchObject({ status: "failing" });
    expect(await rig.h.webhook(ok.id)).toMatchObject({ status: "active" });
    // In order: event b was first tried only after a was given up.
    expect(rig.receiver.at(`${rig.path}/down`).map((r) => verified(r, down.secret).data.id)).toEqual([a.id, a.id, a.id, a.id, b.id]);
    expect((await rig.h.api.get(`/webhooks/${down.id}/deliveries?status=failed`, { key: rig.h.key })).body).toEqual([gaveUp]);

    // The receiver comes back: the next delivery succeeds and the subscription is active again.
    rig.receiver.on(`${rig.path}/down`, () => 200);
    rig.h.advance(CAP_MS);
    expect(await rig.h.dispatch()).toMatchObject({ delivered: 1 });
    expect(await rig.h.webhook(down.id)).toMatchObject({ status: "active" });
    expect((await rig.h.deliveries(down.id)).map((d) => d.status)).toEqual(["failed", "delivered"]);
    expect(rig.receiver.at(`${rig.path}/ok`)).toHaveLength(2);
  });

  it("counts a redirect as a failed attempt and does not follow it", async () => {
    rig.receiver.on(`${rig.path}/moved`, () => 302);
    const hook = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(`${rig.path}/moved`));
    await createCategory(rig.h.api, rig.h.key);
    expect(await rig.h.dispatch()).toMatchObject({ attempted: 1, retried: 1 });
    expect((await rig.h.deliveries(hook.id))[0]).toMatchObject({ status: "pending", lastStatusCode: 302 });
    expect(rig.receiver.at("/elsewhere")).toHaveLength(0);
  });

  it("counts a receiver that does not answer in time as a failed attempt", async () => {
    await rig.h.target.close();
    rig.h = await harness({ WEBHOOK_TIMEOUT_MS: "200" });
    rig.receiver.on(`${rig.path}/hang`, () => "hang");
    const hook = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(`${rig.path}/hang`));
    await createCategory(rig.h.api, rig.h.key);
    expect(await rig.h.dispatch()).toMatchObject({ attempted: 1, retried: 1 });
    const [delivery] = await rig.h.deliveries(hook.id);
    expect(delivery).toMatchObject({ status: "pending", attempts: 1, lastError: "timeout" });
    expect(delivery!.lastStatusCode).toBeUndefined();
  });

  it("records a refused connection as a failed attempt", async () => {
    const closed = await Receiver.start();
    const url = closed.url("/gone");
    await closed.close();
    const hook = await subscribe(rig.h.api, rig.h.key, url);
    await createCategory(rig.h.api, rig.h.key);
    expect(await rig.h.dispatch()).toMatchObject({ attempted: 1, retried: 1 });
    // A coarse outcome, never the raw error text (which would map internal ports).
    expect((await rig.h.deliveries(hook.id))[0]!.lastError).toBe("refused");
  });

  it("sends each attempt once when several dispatchers run at the same time", async () => {
    rig.receiver.on(`${rig.path}/race`, (n) => (n === 1 ? 503 : 204));
    const hook = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(`${rig.path}/race`));
    const categories = [];
    for (let i = 0; i < 5; i++) categories.push(await createCategory(rig.h.api, rig.h.key));
    // First run: the first delivery is waiting for its retry, the others behind it.
    expect(await rig.h.dispatch()).toMatchObject({ attempted: 1, retried: 1 });
    rig.h.advance(CAP_MS);
    // Three dispatchers see the same due head at once; only one may claim it.
    const reports = await Promise.all([rig.h.dispatch(), rig.h.dispatch(), rig.h.dispatch()]);
    expect(reports.reduce((n, r) => n + r.attempted, 0)).toBe(5);
    expect(rig.receiver.at(`${rig.path}/race`).map((r) => verified(r, hook.secret).data.id)).toEqual([categories[0]!.id, ...categories.map((c) => c.id)]);
  });
});

describe("retry schedule", () => {
  it("grows exponentially from the base, with equal jitter, up to the cap", () => {
    expect([1, 2, 3, 4, 5].map((n) => backoffDelayMs(n, 1000, 10_000, () => 0))).toEqual([500, 1000, 2000, 4000, 5000]);
    expect([1, 2, 3, 4, 5].map((n) => backoffDelayMs(n, 1000, 10_000, () => 0.999999))).toEqual([1000, 2000, 4000, 8000, 10_000]);
    expect(backoffDelayMs(200, 1000, 10_000, () => 0.5)).toBe(7500);
  });
});
