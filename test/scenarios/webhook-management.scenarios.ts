/**
 * Managing a subscription (docs/webhooks.md#managing-a-subscription, issue 38), on both runtimes: change its URL
 * and types, pause and resume it, rotate its secret, resend an event, recover,
 * and send a test event. A receiver on a loopback port verifies every delivery
 * with the `standardwebhooks` package; deliveries are waited for (the Node
 * target dispatches when asked, the Worker after each write and on its cron).
 */
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { uniqueName } from "../support/client";
import type { Target } from "../support/target";
import { type Received, Receiver } from "../support/webhook-receiver";
import { api, key, openStaff } from "../support/cast";
import { expectUnauthorized, signUp } from "./accounts.scenarios";
import { createCategory, expectValidationError } from "./categories.scenarios";
import { type DeliveryBody, SECRET_SHAPE, subscribe, type WebhookBody, type WebhookWithSecretBody } from "./webhooks.scenarios";

interface Delivered {
  id: number;
  type: string;
  data: Record<string, unknown>;
}

/** Verify a delivery with each of `secrets` as a receiver holding only that secret would (standardwebhooks); returns the Event. */
export function verifiedWith(r: Received, secrets: string[]): Delivered {
  let event: Delivered | undefined;
  for (const secret of secrets) event = new Webhook(secret).verify(r.body, r.headers) as Delivered;
  expect(() => new Webhook(secrets[0]!).verify(`${r.body} `, r.headers)).toThrow();
  return event!;
}

export function webhookManagementScenarios(getTarget: () => Target): void {
  describe("managing a webhook subscription", () => {
    openStaff(getTarget);
    let receiver: Receiver;
    const hooks: number[] = [];

    beforeAll(async () => {
      receiver = await Receiver.start();
    });
    afterAll(async () => {
      for (const id of hooks) await api.delete(`/webhooks/${id}`, { key });
      await receiver?.close();
    });

    /** A path of its own on the receiver. */
    const path = () => `/${uniqueName("manage").replace(/\W+/g, "-")}`;
    /** Subscribe (deleted after the file). */
    async function hook(at: string, events: string[] = ["category.created"]): Promise<WebhookWithSecretBody> {
      const created = await subscribe(api, key, receiver.url(at), events);
      hooks.push(created.id);
      return created;
    }
    /** Wait until `at` has received `count` requests, dispatching first (the Node target dispatches only when asked). */
    async function received(at: string, count: number): Promise<Received[]> {
      await getTarget().dispatch?.();
      await receiver.waitFor(at, count);
      return receiver.at(at);
    }

    describe("PATCH /webhooks/{webhookId}", () => {
      it("moves the URL: the next event goes to the new one, signed with the same secret", async () => {
        const [before, after] = [path(), path()];
        const sub = await hook(before);
        const res = await api.patch<WebhookBody>(`/webhooks/${sub.id}`, { url: receiver.url(after) }, { key });
        expect(res.status).toBe(200);
        const { secret, ...shown } = sub;
        expect(res.body).toEqual({ ...shown, url: receiver.url(after) });
        expect((await api.get(`/webhooks/${sub.id}`, { key })).body).toEqual(res.body);
        const category = await createCategory(api, key);
        const [delivery] = await received(after, 1);
        expect(verifiedWith(delivery!, [secret])).toMatchObject({ type: "category.created", data: category });
        expect(receiver.at(before)).toHaveLength(0);
      });

      it("changes the event types for events committed after the change", async () => {
        const at = path();
        const sub = await hook(at, ["category.created"]);
        const res = await api.patch<WebhookBody>(`/webhooks/${sub.id}`, { events: ["category.deleted"] }, { key });
        expect(res.body.events).toEqual(["category.deleted"]);
        const category = await createCategory(api, key);
        expect((await api.delete(`/categories/${category.id}`, { key })).status).toBe(204);
        const [delivery] = await received(at, 1);
        expect(verifiedWith(delivery!, [sub.secret])).toMatchObject({ type: "category.deleted", data: { id: category.id } });
      });

      it("pauses (nothing is sent, nothing lost) and resumes in order", async () => {
        const [paused, control] = [path(), path()];
        const sub = await hook(paused);
        expect((await api.patch<WebhookBody>(`/webhooks/${sub.id}`, { enabled: false }, { key })).body).toMatchObject({ enabled: false, status: "active" });
        await hook(control);
        const first = await createCategory(api, key);
        const second = await createCategory(api, key);
        await received(control, 2);
        expect(receiver.at(paused)).toHaveLength(0);
        expect((await api.get<DeliveryBody[]>(`/webhooks/${sub.id}/deliveries`, { key })).body).toEqual([]);

        expect((await api.patch<WebhookBody>(`/webhooks/${sub.id}`, { enabled: true }, { key })).body).toMatchObject({ enabled: true });
        const got = await received(paused, 2);
        expect(got.map((r) => verifiedWith(r, [sub.secret]).data.id)).toEqual([first.id, second.id]);
      });

      it("changes nothing when nothing differs, and refuses what is not a change", async () => {
        const sub = await hook(path());
        const { secret, ...shown } = sub;
        expect((await api.patch(`/webhooks/${sub.id}`, { enabled: true, events: ["category.created"] }, { key })).body).toEqual(shown);
        const cases: [unknown, string][] = [
          [{}, "body"],
          [{ url: null }, "body.url"],
          [{ events: null }, "body.events"],
          [{ enabled: null }, "body.enabled"],
          [{ events: [] }, "body.events"],
          [{ events: ["pet.exploded"] }, "body.events.0"],
          [{ url: "ftp://hooks.petstore.invalid/x" }, "body.url"],
          [{ enabled: "yes" }, "body.enabled"],
          [{ secret: secret }, "body.secret"],
        ];
        for (const [body, at] of cases) expectValidationError(await api.patch(`/webhooks/${sub.id}`, body, { key }), [at]);
        const missing = await api.patch("/webhooks/987654321", { enabled: false }, { key });
        expect([missing.status, missing.body.code]).toEqual([404, "not_found"]);
      });
    });

    describe("POST /webhooks/{webhookId}/secret/rotate", () => {
      it("shows the new secret once; for 24 h deliveries carry both signatures; a retried rotation changes nothing", async () => {
        const at = path();
        const sub = await hook(at);
        const res = await api.post<WebhookWithSecretBody>(`/webhooks/${sub.id}/secret/rotate`, {}, { key });
        expect(res.status).toBe(200);
        expect(res.body.secret).toMatch(SECRET_SHAPE);
        expect(res.body.secret).not.toBe(sub.secret);
        expect(JSON.stringify((await api.get(`/webhooks/${sub.id}`, { key })).body)).not.toContain(res.body.secret);

        await createCategory(api, key);
        const [delivery] = await received(at, 1);
        expect(delivery!.headers["webhook-signature"]!.split(" ")).toHaveLength(2);
        // A receiver holding either secret accepts it.
        verifiedWith(delivery!, [res.body.secret]);
        verifiedWith(delivery!, [sub.secret]);

        const given = `whsec_${Buffer.from(uniqueName("k").padEnd(32, "x").slice(0, 32)).toString("base64")}`;
        const once = await api.post<WebhookWithSecretBody>(`/webhooks/${sub.id}/secret/rotate`, { secret: given }, { key });
        const again = await api.post<WebhookWithSecretBody>(`/webhooks/${sub.id}/secret/rotate`, { secret: given }, { key });
        expect([once.status, again.status]).toEqual([200, 200]);
        expect(again.body).toEqual(once.body);
        await createCategory(api, key);
        const [, next] = await received(at, 2);
        // The secret before `given` still signs: the retry did not make `given` its own predecessor.
        verifiedWith(next!, [given]);
        verifiedWith(next!, [res.body.secret]);

        expectValidationError(await api.post(`/webhooks/${sub.id}/secret/rotate`, { secret: "whsec_short" }, { key }), ["body.secret"]);
        expectValidationError(await api.post(`/webhooks/${sub.id}/secret/rotate`, { secret: "x", extra: 1 }, { key }), ["body.extra"]);
      });
    });

    describe("resend, recover and test", () => {
      it("resends an event with its own webhook-id, outside the ordered stream", async () => {
        const at = path();
        const sub = await hook(at);
        await createCategory(api, key);
        const [first] = await received(at, 1);
        const event = verifiedWith(first!, [sub.secret]);
        const res = await api.post<DeliveryBody>(`/webhooks/${sub.id}/events/${event.id}/resend`, undefined, { key });
        expect(res.status).toBe(202);
        expect(res.body).toMatchObject({ webhookId: sub.id, eventId: event.id, eventType: "category.created", status: "pending", attempts: 0 });
        const [, again] = await received(at, 2);
        expect(verifiedWith(again!, [sub.secret])).toEqual(event);
        expect(again!.headers["webhook-id"]).toBe(first!.headers["webhook-id"]);

        const other = await hook(path(), ["category.deleted"]);
        for (const url of [
          `/webhooks/${other.id}/events/${event.id}/resend`,
          `/webhooks/${sub.id}/events/987654321/resend`,
          `/webhooks/987654321/events/${event.id}/resend`,
        ]) {
          const refused = await api.post(url, undefined, { key });
          expect([refused.status, refused.body.code], url).toEqual([404, "not_found"]);
        }
      });

      it("recovers nothing when nothing was given up, and checks its body", async () => {
        const sub = await hook(path());
        const res = await api.post<{ queued: number }>(`/webhooks/${sub.id}/recover`, { since: "2026-01-01T00:00:00Z" }, { key });
        expect([res.status, res.body]).toEqual([202, { queued: 0 }]);
        expectValidationError(await api.post(`/webhooks/${sub.id}/recover`, {}, { key }), ["body.since"]);
        expectValidationError(await api.post(`/webhooks/${sub.id}/recover`, { since: "yesterday" }, { key }), ["body.since"]);
        expect((await api.post("/webhooks/987654321/recover", { since: "2026-01-01T00:00:00Z" }, { key })).status).toBe(404);
      });

      it("sends a signed webhook.test at once: in the delivery log as event 0, not in GET /events", async () => {
        const at = path();
        const sub = await hook(at);
        const res = await api.post<DeliveryBody>(`/webhooks/${sub.id}/test`, undefined, { key });
        expect(res.status).toBe(202);
        expect(res.body).toMatchObject({ webhookId: sub.id, eventId: 0, eventType: "webhook.test", status: "pending" });
        const [delivery] = await received(at, 1);
        expect(verifiedWith(delivery!, [sub.secret])).toMatchObject({ id: 0, type: "webhook.test", data: { webhookId: sub.id } });
        let log: DeliveryBody[] = [];
        for (let i = 0; i < 50 && log[0]?.status !== "delivered"; i++) {
          log = (await api.get<DeliveryBody[]>(`/webhooks/${sub.id}/deliveries`, { key })).body;
          if (log[0]?.status !== "delivered") await getTarget().dispatch?.();
        }
        expect(log).toEqual([expect.objectContaining({ eventId: 0, eventType: "webhook.test", status: "delivered", attempts: 1 })]);
        const events = await api.get<{ type: string }[]>("/events?limit=100", { key });
        expect(events.body.map((e) => e.type)).not.toContain("webhook.test");
      });

      it("need a staff key: 401 without a key, 403 with a customer key", async () => {
        const sub = await hook(path());
        const customer = (await signUp(api)).apiKey.key;
        const calls: [string, string, unknown][] = [
          ["PATCH", `/webhooks/${sub.id}`, { enabled: false }],
          ["POST", `/webhooks/${sub.id}/secret/rotate`, {}],
          ["POST", `/webhooks/${sub.id}/events/1/resend`, undefined],
          ["POST", `/webhooks/${sub.id}/recover`, { since: "2026-01-01T00:00:00Z" }],
          ["POST", `/webhooks/${sub.id}/test`, undefined],
        ];
        for (const [method, url, body] of calls) {
          const send = (options: { key?: string }) => (method === "PATCH" ? api.patch(url, body, options) : api.post(url, body, options));
          expectUnauthorized(await send({}));
          expect((await send({ key: customer })).status, url).toBe(403);
        }
      });
    });
  });
}
