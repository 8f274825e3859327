/**
 * Webhook subscriptions isolated from each other (docs/webhooks.md#design): a slow or hanging receiver does not hold back
 * another subscription's deliveries, a subscription deleted while a round sends to it fails nothing, and the events a
 * subscription waits for survive re-typing, cut chains and a pause during a retry.
 */
import { describe, expect, it } from "vitest";
import { dispatchDue } from "../../src/services/webhooks/dispatch";
import { createCategory } from "../scenarios/categories.scenarios";
import { createPet } from "../scenarios/pets.scenarios";
import { subscribe } from "../scenarios/webhooks.scenarios";
import { CAP_MS, useDeliveryRig } from "../support/webhook-harness";
import { verified } from "../support/webhook-receiver";

const rig = useDeliveryRig();

/** Resolves with `promise`, or rejects after `ms` of real time saying what did not happen. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([promise, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`not within ${ms} ms: ${what}`)), ms))]);
}

describe("webhook isolation", () => {
  it("delivers to a fast subscription while another's receiver hangs, also events committed after the hang began", async () => {
    const [slow, fast] = [`${rig.path}/slow`, `${rig.path}/fast`];
    rig.receiver.on(slow, () => "hang");
    await subscribe(rig.h.api, rig.h.key, rig.receiver.url(slow), ["category.created"]);
    const hook = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(fast), ["category.created"]);
    const first = [await createCategory(rig.h.api, rig.h.key), await createCategory(rig.h.api, rig.h.key)];
    const running = rig.h.dispatch();
    await within(rig.receiver.waitFor(fast, 2), 3000, "the first two deliveries");
    const later = [await createCategory(rig.h.api, rig.h.key), await createCategory(rig.h.api, rig.h.key)];
    // Another process's (or invocation's) run while the hanging attempt is still out.
    const other = dispatchDue(rig.h.target.db, { config: rig.h.config, now: rig.h.clock, fetch: (input, init) => fetch(input, init) });
    await within(rig.receiver.waitFor(fast, 4), 3000, "the deliveries committed after the hang began");
    expect(rig.receiver.at(slow)).toHaveLength(0);
    await Promise.all([running, other]);
    expect(rig.receiver.at(fast).map((r) => verified(r, hook.secret).data.id)).toEqual([...first, ...later].map((c) => c.id));
    expect((await rig.h.deliveries(hook.id)).map((d) => d.status)).toEqual(["delivered", "delivered", "delivered", "delivered"]);
  });

  it("fails no round when a subscription is deleted while the round sends to it, and sends nothing twice", async () => {
    const [doomed, kept] = [`${rig.path}/doomed`, `${rig.path}/kept`];
    const gone = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(doomed), ["category.created"]);
    const hook = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(kept), ["category.created"]);
    const a = await createCategory(rig.h.api, rig.h.key);
    // The fault: the subscription is deleted while its attempt is on the wire.
    const deleting = async (input: string, init: RequestInit) => {
      if (input.includes("/doomed")) expect((await rig.h.api.delete(`/webhooks/${gone.id}`, { key: rig.h.key })).status).toBe(204);
      return fetch(input, init);
    };
    await dispatchDue(rig.h.target.db, { config: rig.h.config, now: rig.h.clock, fetch: deleting });
    const b = await createCategory(rig.h.api, rig.h.key);
    await rig.h.dispatch();
    expect(rig.receiver.at(kept).map((r) => verified(r, hook.secret).data.id)).toEqual([a.id, b.id]);
    expect((await rig.h.deliveries(hook.id)).map((d) => [d.eventId, d.status])).toEqual([
      [a.id, "delivered"],
      [b.id, "delivered"],
    ]);
  });

  it("keeps the events waiting through a second change of types (each applies from its own change on)", async () => {
    const at = `${rig.path}/retype`;
    const hook = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(at), ["category.created"]);
    const category = await createCategory(rig.h.api, rig.h.key);
    await rig.h.api.patch(`/webhooks/${hook.id}`, { events: ["pet.created"] }, { key: rig.h.key });
    const pets = [await createPet(rig.h.api, rig.h.key, category.id)];
    await rig.h.dispatch();
    await rig.h.api.patch(`/webhooks/${hook.id}`, { enabled: false }, { key: rig.h.key });
    pets.push(await createPet(rig.h.api, rig.h.key, category.id), await createPet(rig.h.api, rig.h.key, category.id));
    await rig.h.dispatch();
    await rig.h.api.patch(`/webhooks/${hook.id}`, { events: ["pet.created", "category.created"] }, { key: rig.h.key });
    await rig.h.api.patch(`/webhooks/${hook.id}`, { enabled: true }, { key: rig.h.key });
    pets.push(await createPet(rig.h.api, rig.h.key, category.id));
    await rig.h.dispatch();
    const got = rig.receiver.at(at).map((r) => verified(r, hook.secret));
    expect(got.map((e) => [e.type, e.id])).toEqual([["category.created", expect.any(Number)], ...pets.map(() => ["pet.created", expect.any(Number)])]);
    expect(got.filter((e) => e.type === "pet.created").map((e) => (e.data as { id: number }).id)).toEqual(pets.map((p) => p.id));
  });

  it("starts the head after a cut chain with no attempts of its own: every delivery logged once", async () => {
    const at = `${rig.path}/cut`;
    rig.receiver.on(at, (n) => (n === 1 ? 503 : 204));
    const hook = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(at), ["category.created"]);
    await createCategory(rig.h.api, rig.h.key);
    await rig.h.dispatch(); // the first attempt fails: queued with 1 attempt and a due time
    for (let i = 0; i < 45; i++) await createCategory(rig.h.api, rig.h.key);
    rig.h.advance(CAP_MS);
    await rig.h.dispatch(); // chains of 20: the first chain is cut after 20
    expect(rig.receiver.at(at)).toHaveLength(47);
    const log = await rig.h.deliveries(hook.id);
    expect(log).toHaveLength(46);
    expect(log.map((d) => [d.status, d.attempts])).toEqual([["delivered", 2], ...Array.from({ length: 45 }, () => ["delivered", 1])]);
  });

  it("leaves one log entry for an event whose retrying head was paused, then delivered after the resume", async () => {
    const at = `${rig.path}/paused-head`;
    rig.receiver.on(at, (n) => (n === 1 ? 503 : 204));
    const hook = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(at), ["category.created"]);
    const a = await createCategory(rig.h.api, rig.h.key);
    await rig.h.dispatch();
    await rig.h.api.patch(`/webhooks/${hook.id}`, { enabled: false }, { key: rig.h.key });
    rig.h.advance(CAP_MS);
    await rig.h.dispatch();
    await rig.h.api.patch(`/webhooks/${hook.id}`, { enabled: true }, { key: rig.h.key });
    await rig.h.dispatch();
    expect(rig.receiver.at(at).map((r) => r.status)).toEqual([503, 204]);
    expect((await rig.h.deliveries(hook.id)).map((d) => [d.eventId, d.status])).toEqual([[a.id, "delivered"]]);
  });

  it("sends one subscription's test while another has 80 redeliveries queued", async () => {
    const [busy, quiet] = [`${rig.path}/busy`, `${rig.path}/quiet`];
    const loud = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(busy), ["category.created"]);
    const hook = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(quiet), ["category.created"]);
    for (let i = 0; i < 80; i++) await rig.h.api.post(`/webhooks/${loud.id}/test`, undefined, { key: rig.h.key });
    expect((await rig.h.api.post(`/webhooks/${hook.id}/test`, undefined, { key: rig.h.key })).status).toBe(202);
    // One round: the quiet subscription's test goes in it, beside the busy one's first chain.
    const rounds = { n: 0 };
    const counting = async (input: string, init: RequestInit) => {
      if (input.includes("/quiet")) rounds.n = rig.receiver.at(busy).length;
      return fetch(input, init);
    };
    await dispatchDue(rig.h.target.db, { config: rig.h.config, now: rig.h.clock, fetch: counting });
    expect(rig.receiver.at(quiet)).toHaveLength(1);
    expect(rounds.n).toBeLessThan(20);
    expect(rig.receiver.at(busy)).toHaveLength(80);
  });
});
