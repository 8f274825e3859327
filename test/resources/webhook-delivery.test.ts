/**
 * Webhook deliveries end to end on Node (docs/api.md#events-and-webhooks, issue 6): a real receiver
 * on a loopback port (node:http, port 0) verifies every delivery with the
 * public `standardwebhooks` package (and an independent node:crypto HMAC),
 * while the test drives `dispatchDue` directly with an injected clock
 * (test/support/webhook-harness.ts) — no sleeps.
 *
 * Covered: every wanted event delivered once, in order per subscription, with
 * the Event JSON as payload; type filters; deleted subscriptions get nothing;
 * store events; private targets are refused unless allowed; the Node
 * dispatcher loop and the after-write nudge. Failed attempts and retries are
 * in webhook-retries.test.ts.
 */
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config";
import { isPrivateHost } from "../../src/domain/private-address";
import { createWebhookDispatcher, dispatchDue, WebhookDispatcher } from "../../src/services/webhooks/dispatch";
import { connect } from "../support/client";
import { nodeTarget, TEST_ENV } from "../support/node-target";
import { DELIVERY_ENV, harness, useDeliveryRig } from "../support/webhook-harness";
import { createCategory, expectValidationError } from "../scenarios/categories.scenarios";
import { eventsAfter } from "../support/event-log";
import { createPet } from "../scenarios/pets.scenarios";
import { subscribe } from "../scenarios/webhooks.scenarios";
import { verified } from "../support/webhook-receiver";

const rig = useDeliveryRig();

describe("webhook delivery", () => {
  it("delivers every event after the subscription, signed, in order, as the Event of GET /events — once", async () => {
    const before = await createCategory(rig.h.api, rig.h.key);
    const hook = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(`${rig.path}/ok`));
    const category = await createCategory(rig.h.api, rig.h.key);
    const pet = await createPet(rig.h.api, rig.h.key, category.id);
    expect((await rig.h.api.patch(`/pets/${pet.id}`, { status: "sold" }, { key: rig.h.key })).status).toBe(200);
    expect((await rig.h.api.delete(`/pets/${pet.id}`, { key: rig.h.key })).status).toBe(204);
    expect((await rig.h.api.patch(`/categories/${category.id}`, { description: "changed" }, { key: rig.h.key })).status).toBe(200);

    const log = await eventsAfter(rig.h.api, rig.h.key, 0);
    const expected = log.filter((e) => e.id > log.find((x) => x.data.id === before.id)!.id);
    expect(expected.map((e) => e.type)).toEqual(["category.created", "pet.created", "pet.updated", "inventory.updated", "pet.deleted", "category.updated"]);

    const report = await rig.h.dispatch();
    expect(report).toEqual({ attempted: 6, delivered: 6, retried: 0, givenUp: 0, subscriptions: { [hook.id]: { delivered: 6, failed: 0, givenUp: 0 } } });
    const got = rig.receiver.at(`${rig.path}/ok`).map((r) => verified(r, hook.secret));
    expect(got).toEqual(expected);

    const deliveries = await rig.h.deliveries(hook.id);
    expect(deliveries.map((d) => [d.eventId, d.eventType, d.status, d.attempts, d.lastStatusCode])).toEqual(
      expected.map((e) => [e.id, e.type, "delivered", 1, 204]),
    );
    for (const d of deliveries) expect(d.deliveredAt).toBe(rig.h.clock().toISOString());

    // Nothing is due any more: a second run sends nothing.
    expect(await rig.h.dispatch()).toEqual({ attempted: 0, delivered: 0, retried: 0, givenUp: 0, subscriptions: {} });
    expect(rig.receiver.at(`${rig.path}/ok`)).toHaveLength(6);
  });

  it("sends only the subscribed event types", async () => {
    const hook = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(`${rig.path}/some`), ["pet.created", "category.deleted"]);
    const all = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(`${rig.path}/all`), ["*"]);
    const category = await createCategory(rig.h.api, rig.h.key);
    const pet = await createPet(rig.h.api, rig.h.key, category.id);
    await rig.h.api.patch(`/pets/${pet.id}`, { name: "Renamed" }, { key: rig.h.key });
    await rig.h.api.delete(`/pets/${pet.id}`, { key: rig.h.key });
    await rig.h.api.delete(`/categories/${category.id}`, { key: rig.h.key });
    await rig.h.dispatch();
    expect(rig.receiver.at(`${rig.path}/some`).map((r) => verified(r, hook.secret).type)).toEqual(["pet.created", "category.deleted"]);
    expect(rig.receiver.at(`${rig.path}/all`).map((r) => verified(r, all.secret).type)).toEqual([
      "category.created",
      "pet.created",
      "pet.updated",
      "pet.deleted",
      "category.deleted",
    ]);
    expect((await rig.h.deliveries(hook.id)).map((d) => d.eventType)).toEqual(["pet.created", "category.deleted"]);
  });

  it("sends nothing to a deleted subscription", async () => {
    const hook = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(`${rig.path}/ok`));
    await createCategory(rig.h.api, rig.h.key);
    await rig.h.dispatch();
    await createCategory(rig.h.api, rig.h.key);
    expect((await rig.h.api.delete(`/webhooks/${hook.id}`, { key: rig.h.key })).status).toBe(204);
    expect(await rig.h.dispatch()).toMatchObject({ attempted: 0 });
    expect(rig.receiver.at(`${rig.path}/ok`)).toHaveLength(1);
  });

  it("delivers store events too", async () => {
    const hook = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(`${rig.path}/ok`), ["order.placed", "order.cancelled"]);
    const category = await createCategory(rig.h.api, rig.h.key);
    const pet = await createPet(rig.h.api, rig.h.key, category.id);
    const order = await rig.h.api.post("/store/orders", { petId: pet.id, quantity: 1 }, { key: rig.h.key });
    expect(order.status).toBe(201);
    expect((await rig.h.api.delete(`/store/orders/${order.body.id}`, { key: rig.h.key })).status).toBe(204);
    await rig.h.dispatch();
    expect(
      rig.receiver
        .at(`${rig.path}/ok`)
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
    const hook = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(`${rig.path}/ok`));
    await createCategory(rig.h.api, rig.h.key);
    const strictConfig = parseConfig({ ...TEST_ENV, ...DELIVERY_ENV, WEBHOOKS_ALLOW_PRIVATE: "false" });
    expect(await dispatchDue(rig.h.target.db, { config: strictConfig, now: rig.h.clock, fetch })).toMatchObject({ attempted: 1, retried: 1 });
    expect(rig.receiver.at(`${rig.path}/ok`)).toHaveLength(0);
    expect((await rig.h.deliveries(hook.id))[0]!.lastError).toBe("private_address");
  });

  it("isPrivateHost classifies literal addresses as URL.hostname gives them", () => {
    const host = (url: string) => new URL(url).hostname;
    expect(isPrivateHost(host("http://[::ffff:127.0.0.1]/"))).toBe(true);
    expect(isPrivateHost(host("http://0177.0.0.1/"))).toBe(true);
    expect(isPrivateHost(host("http://[::ffff:8.8.8.8]/"))).toBe(false);
    expect(isPrivateHost(host("http://8.8.8.8/"))).toBe(false);
    expect(isPrivateHost(host("http://localhost.example.com/"))).toBe(false);
    expect(isPrivateHost(host("http://[2001:db8::1]/"))).toBe(true); // documentation range (RFC 3849): not global unicast
    expect(isPrivateHost(host("http://[ff02::1]/"))).toBe(true);
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

  it("starts no new attempt (nor round) once stopped (shutdown): the run's signal is aborted", async () => {
    await subscribe(rig.h.api, rig.h.key, rig.receiver.url(`${rig.path}/ok`));
    await createCategory(rig.h.api, rig.h.key);
    const stopped = new AbortController();
    stopped.abort();
    expect(await dispatchDue(rig.h.target.db, { config: rig.h.config, now: rig.h.clock, fetch, signal: stopped.signal })).toMatchObject({
      attempted: 0,
    });
    // Likewise past the run's time limit.
    expect(await dispatchDue(rig.h.target.db, { config: rig.h.config, now: rig.h.clock, fetch, maxRunMs: 0 })).toMatchObject({ attempted: 0 });
    expect(rig.receiver.at(`${rig.path}/ok`)).toHaveLength(0);
    expect(await rig.h.dispatch()).toMatchObject({ attempted: 1, delivered: 1 });
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
    const hook = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(`${rig.path}/ok`));
    await createCategory(rig.h.api, rig.h.key);
    const dispatcher = createWebhookDispatcher(rig.h.target.db, { config: rig.h.config, now: rig.h.clock }).start(5);
    await rig.receiver.waitFor(`${rig.path}/ok`, 1);
    await dispatcher.stop();
    expect(rig.receiver.at(`${rig.path}/ok`).map((r) => verified(r, hook.secret).type)).toEqual(["category.created"]);
  });

  it("write listeners hear the writes that committed events only", async () => {
    const seen: string[] = [];
    const target = await nodeTarget({}, { afterWrite: [(c) => void seen.push(`${c.req.method} ${c.res.status}`)] });
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
