/**
 * Webhook deliveries end to end on Node (docs/api.md#events-and-webhooks, issue 6): a real receiver
 * on a loopback port (node:http, port 0) verifies every delivery with the
 * public `standardwebhooks` package (and an independent node:crypto HMAC),
 * while the test drives `dispatchDue` directly with an injected clock — no
 * sleeps: retries become due by moving the clock, not by waiting.
 *
 * Covered: every wanted event delivered at least once, in order per
 * subscription, with the Event JSON as payload; type filters; a receiver that
 * fails three times then recovers; a receiver that never recovers ends
 * `failing` without blocking another subscription (nor its own later events);
 * redirects and timeouts are failed attempts; concurrent dispatchers send each
 * attempt once; deleted subscriptions get nothing; private targets are refused
 * unless allowed; the Node dispatcher loop and the after-write nudge.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { parseConfig, type AppConfig } from "../../src/config";
import { afterWrites } from "../../src/middleware/after-writes";
import { isPrivateHost } from "../../src/domain/private-address";
import { createWebhookDispatcher, dispatchDue, WebhookDispatcher, type DispatchReport } from "../../src/services/webhooks/dispatch";
import { backoffDelayMs } from "../../src/domain/backoff";
import { connect, type ApiClient } from "../support/client";
import { nodeTarget, TEST_ENV, type NodeTarget } from "../support/node-target";
import { createCategory, expectValidationError } from "../scenarios/categories.scenarios";
import { eventsAfter } from "../support/event-log";
import { createPet } from "../scenarios/pets.scenarios";
import { subscribe, type DeliveryBody, type WebhookBody } from "../scenarios/webhooks.scenarios";
import { Receiver, verified } from "../support/webhook-receiver";

// ------------------------------------------------------------------ setup

const BASE_MS = 1000;
const CAP_MS = 4000;
const MAX_ATTEMPTS = 4;
const DELIVERY_ENV = {
  WEBHOOK_RETRY_BASE_MS: String(BASE_MS),
  WEBHOOK_RETRY_CAP_MS: String(CAP_MS),
  WEBHOOK_MAX_ATTEMPTS: String(MAX_ATTEMPTS),
  WEBHOOK_TIMEOUT_MS: "5000",
};

let receiver: Receiver;
beforeAll(async () => {
  receiver = await Receiver.start();
});
afterAll(async () => {
  await receiver?.close();
});

interface Harness {
  target: NodeTarget;
  api: ApiClient;
  key: string;
  config: AppConfig;
  clock: () => Date;
  /** Move the injected clock forward, ms. */
  advance(ms: number): void;
  dispatch(): Promise<DispatchReport>;
  deliveries(webhookId: number): Promise<DeliveryBody[]>;
  webhook(webhookId: number): Promise<WebhookBody>;
}

/** A fresh app + database with an injected clock (starting at the real time, so signatures stay within the 5-minute tolerance). */
async function harness(env: Record<string, string> = {}): Promise<Harness> {
  let nowMs = Date.now();
  const clock = () => new Date(nowMs);
  const target = await nodeTarget({ ...DELIVERY_ENV, ...env }, { clock });
  const config = parseConfig({ ...TEST_ENV, ...DELIVERY_ENV, ...env });
  const api = await connect(target);
  const key = target.staffKey;
  return {
    target,
    api,
    key,
    config,
    clock,
    advance: (ms) => {
      nowMs += ms;
    },
    dispatch: () => dispatchDue(target.db, { config, now: clock, fetch: (input, init) => fetch(input, init) }),
    deliveries: async (webhookId) => {
      const res = await api.get<DeliveryBody[]>(`/webhooks/${webhookId}/deliveries?limit=100`, { key });
      expect(res.status).toBe(200);
      return res.body;
    },
    webhook: async (webhookId) => (await api.get<WebhookBody>(`/webhooks/${webhookId}`, { key })).body,
  };
}

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

// ------------------------------------------------------------------ tests

describe("webhook delivery", () => {
  it("delivers every event after the subscription, signed, in order, as the Event of GET /events — once", async () => {
    const before = await createCategory(h.api, h.key);
    const hook = await subscribe(h.api, h.key, receiver.url(`${path}/ok`));
    const category = await createCategory(h.api, h.key);
    const pet = await createPet(h.api, h.key, category.id);
    expect((await h.api.patch(`/pets/${pet.id}`, { status: "sold" }, { key: h.key })).status).toBe(200);
    expect((await h.api.delete(`/pets/${pet.id}`, { key: h.key })).status).toBe(204);
    expect((await h.api.patch(`/categories/${category.id}`, { description: "changed" }, { key: h.key })).status).toBe(200);

    const log = await eventsAfter(h.api, h.key, 0);
    const expected = log.filter((e) => e.id > log.find((x) => x.data.id === before.id)!.id);
    expect(expected.map((e) => e.type)).toEqual(["category.created", "pet.created", "pet.updated", "inventory.updated", "pet.deleted", "category.updated"]);

    const report = await h.dispatch();
    expect(report).toEqual({ queued: 6, attempted: 6, delivered: 6, retried: 0, givenUp: 0 });
    const got = receiver.at(`${path}/ok`).map((r) => verified(r, hook.secret));
    expect(got).toEqual(expected);

    const deliveries = await h.deliveries(hook.id);
    expect(deliveries.map((d) => [d.eventId, d.eventType, d.status, d.attempts, d.lastStatusCode])).toEqual(
      expected.map((e) => [e.id, e.type, "delivered", 1, 204]),
    );
    for (const d of deliveries) expect(d.deliveredAt).toBe(h.clock().toISOString());

    // Nothing is due any more: a second run sends nothing.
    expect(await h.dispatch()).toEqual({ queued: 0, attempted: 0, delivered: 0, retried: 0, givenUp: 0 });
    expect(receiver.at(`${path}/ok`)).toHaveLength(6);
  });

  it("sends only the subscribed event types", async () => {
    const hook = await subscribe(h.api, h.key, receiver.url(`${path}/some`), ["pet.created", "category.deleted"]);
    const all = await subscribe(h.api, h.key, receiver.url(`${path}/all`), ["*"]);
    const category = await createCategory(h.api, h.key);
    const pet = await createPet(h.api, h.key, category.id);
    await h.api.patch(`/pets/${pet.id}`, { name: "Renamed" }, { key: h.key });
    await h.api.delete(`/pets/${pet.id}`, { key: h.key });
    await h.api.delete(`/categories/${category.id}`, { key: h.key });
    await h.dispatch();
    expect(receiver.at(`${path}/some`).map((r) => verified(r, hook.secret).type)).toEqual(["pet.created", "category.deleted"]);
    expect(receiver.at(`${path}/all`).map((r) => verified(r, all.secret).type)).toEqual([
      "category.created",
      "pet.created",
      "pet.updated",
      "pet.deleted",
      "category.deleted",
    ]);
    expect((await h.deliveries(hook.id)).map((d) => d.eventType)).toEqual(["pet.created", "category.deleted"]);
  });

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

  it("sends nothing to a deleted subscription", async () => {
    const hook = await subscribe(h.api, h.key, receiver.url(`${path}/ok`));
    await createCategory(h.api, h.key);
    await h.dispatch();
    await createCategory(h.api, h.key);
    expect((await h.api.delete(`/webhooks/${hook.id}`, { key: h.key })).status).toBe(204);
    expect(await h.dispatch()).toMatchObject({ attempted: 0 });
    expect(receiver.at(`${path}/ok`)).toHaveLength(1);
  });

  it("delivers store events too", async () => {
    const hook = await subscribe(h.api, h.key, receiver.url(`${path}/ok`), ["order.placed", "order.cancelled"]);
    const category = await createCategory(h.api, h.key);
    const pet = await createPet(h.api, h.key, category.id);
    const order = await h.api.post("/store/orders", { petId: pet.id, quantity: 1 }, { key: h.key });
    expect(order.status).toBe(201);
    expect((await h.api.delete(`/store/orders/${order.body.id}`, { key: h.key })).status).toBe(204);
    await h.dispatch();
    expect(
      receiver
        .at(`${path}/ok`)
        .map((r) => verified(r, hook.secret))
        .map((e) => [e.type, e.data]),
    ).toEqual([
      ["order.placed", order.body],
      ["order.cancelled", order.body],
    ]);
  });
});

describe("private targets", () => {
  it("are refused with 400 validation_error unless WEBHOOKS_ALLOW_PRIVATE=true", async () => {
    const strict = await harness({ WEBHOOKS_ALLOW_PRIVATE: "false" });
    try {
      for (const url of [
        "http://127.0.0.1:8080/hook",
        "http://127.1/hook",
        "http://2130706433/hook",
        "http://0x7f000001/hook",
        "http://0.0.0.0/",
        "http://localhost/hook",
        "http://LOCALHOST./hook",
        "https://api.localhost/hook",
        "http://10.1.2.3/",
        "http://172.16.0.1/",
        "http://172.31.255.255/",
        "http://192.168.1.1/",
        "http://169.254.169.254/latest/meta-data",
        "http://100.64.0.1/",
        "http://[::1]/hook",
        "http://[::]/",
        "http://[fe80::1]/",
        "http://[fd00::1]/",
        "http://[fc00::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:10.0.0.1]/",
        "http://[64:ff9b::a00:1]/",
        "http://[2002:7f00:1::]/",
        "http://224.0.0.1/",
      ]) {
        const res = await strict.api.post("/webhooks", { url, events: ["*"] }, { key: strict.key });
        expectValidationError(res, ["body.url"]);
        expect(res.body.details[0].message, url).toMatch(/not allowed/);
      }
      for (const url of ["https://example.com/hook", "http://93.184.216.34/hook", "https://[2606:4700::1111]/hook", "http://172.32.0.1/", "http://11.0.0.1/"]) {
        expect((await strict.api.post("/webhooks", { url, events: ["*"] }, { key: strict.key })).status, url).toBe(201);
      }
    } finally {
      await strict.target.close();
    }
  });

  it("are not contacted by a dispatcher whose configuration refuses them", async () => {
    const hook = await subscribe(h.api, h.key, receiver.url(`${path}/ok`));
    await createCategory(h.api, h.key);
    const strictConfig = parseConfig({ ...TEST_ENV, ...DELIVERY_ENV, WEBHOOKS_ALLOW_PRIVATE: "false" });
    expect(await dispatchDue(h.target.db, { config: strictConfig, now: h.clock, fetch })).toMatchObject({ attempted: 1, retried: 1 });
    expect(receiver.at(`${path}/ok`)).toHaveLength(0);
    expect((await h.deliveries(hook.id))[0]!.lastError).toBe("private_address");
  });

  it("isPrivateHost classifies literal addresses as URL.hostname gives them", () => {
    const host = (url: string) => new URL(url).hostname;
    expect(isPrivateHost(host("http://[::ffff:127.0.0.1]/"))).toBe(true);
    expect(isPrivateHost(host("http://0177.0.0.1/"))).toBe(true);
    expect(isPrivateHost(host("http://[::ffff:8.8.8.8]/"))).toBe(false);
    expect(isPrivateHost(host("http://8.8.8.8/"))).toBe(false);
    expect(isPrivateHost(host("http://localhost.example.com/"))).toBe(false);
    expect(isPrivateHost(host("http://[2001:db8::1]/"))).toBe(false);
    expect(isPrivateHost(host("http://[ff02::1]/"))).toBe(true);
  });
});

describe("retry schedule", () => {
  it("grows exponentially from the base, with equal jitter, up to the cap", () => {
    expect([1, 2, 3, 4, 5].map((n) => backoffDelayMs(n, 1000, 10_000, () => 0))).toEqual([500, 1000, 2000, 4000, 5000]);
    expect([1, 2, 3, 4, 5].map((n) => backoffDelayMs(n, 1000, 10_000, () => 0.999999))).toEqual([1000, 2000, 4000, 8000, 10_000]);
    expect(backoffDelayMs(200, 1000, 10_000, () => 0.5)).toBe(7500);
  });
});

describe("Node dispatcher", () => {
  it("runs are never concurrent; a nudge during a run causes exactly one more run; stop() waits", async () => {
    let runs = 0;
    let release: () => void = () => {};
    const dispatcher = new WebhookDispatcher(async () => {
      runs += 1;
      if (runs === 1) await new Promise<void>((resolve) => (release = resolve));
    });
    const first = dispatcher.nudge();
    const second = dispatcher.nudge();
    const third = dispatcher.nudge();
    expect(runs).toBe(1);
    release();
    await Promise.all([first, second, third]);
    expect(runs).toBe(2);
    await dispatcher.stop();
    await dispatcher.nudge();
    expect(runs).toBe(2);
  });

  it("starts no new attempt (nor fan-out batch) once stopped (shutdown): the run's signal is aborted", async () => {
    await subscribe(h.api, h.key, receiver.url(`${path}/ok`));
    await createCategory(h.api, h.key);
    const stopped = new AbortController();
    stopped.abort();
    expect(await dispatchDue(h.target.db, { config: h.config, now: h.clock, fetch, signal: stopped.signal })).toMatchObject({ queued: 0, attempted: 0 });
    // Likewise past the run's time limit.
    expect(await dispatchDue(h.target.db, { config: h.config, now: h.clock, fetch, maxRunMs: 0 })).toMatchObject({ attempted: 0 });
    expect(receiver.at(`${path}/ok`)).toHaveLength(0);
    expect(await h.dispatch()).toMatchObject({ attempted: 1, delivered: 1 });
  });

  it("logs a failed run and keeps going", async () => {
    const lines: string[] = [];
    let runs = 0;
    const dispatcher = new WebhookDispatcher(
      async () => {
        runs += 1;
        throw new Error("database is down");
      },
      (line) => lines.push(line),
    );
    await dispatcher.nudge();
    await dispatcher.nudge();
    expect(runs).toBe(2);
    expect(lines).toEqual(["webhook dispatch failed: database is down", "webhook dispatch failed: database is down"]);
  });

  it("polls on its timer and delivers", async () => {
    const hook = await subscribe(h.api, h.key, receiver.url(`${path}/ok`));
    await createCategory(h.api, h.key);
    const dispatcher = createWebhookDispatcher(h.target.db, { config: h.config, now: h.clock }).start(5);
    await receiver.waitFor(`${path}/ok`, 1);
    await dispatcher.stop();
    expect(receiver.at(`${path}/ok`).map((r) => verified(r, hook.secret).type)).toEqual(["category.created"]);
  });

  it("afterWrites calls back after successful writes only", async () => {
    const seen: string[] = [];
    const target = await nodeTarget({}, { middleware: [afterWrites((c) => seen.push(`${c.req.method} ${c.res.status}`))] });
    try {
      const api = await connect(target);
      const category = await createCategory(api, target.staffKey);
      expect((await api.post("/categories", { name: category.name }, { key: target.staffKey })).status).toBe(409);
      expect((await api.get("/categories")).status).toBe(200);
      expect((await api.post("/categories", {}, { key: target.staffKey })).status).toBe(400);
      expect((await api.delete(`/categories/${category.id}`, { key: target.staffKey })).status).toBe(204);
      expect(seen).toEqual(["POST 201", "DELETE 204"]);
    } finally {
      await target.close();
    }
  });
});
