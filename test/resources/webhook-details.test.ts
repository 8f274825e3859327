/**
 * Management details (docs/webhooks.md#managing-a-subscription): `recover {since}` orders instants, not text, and refuses what
 * it cannot order; every secret a rotation replaced in the last 24 h signs; resend and test take no unknown member; the
 * redeliveries queued for one subscription are capped.
 */
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { createCategory, expectValidationError } from "../scenarios/categories.scenarios";
import { subscribe, type WebhookWithSecretBody } from "../scenarios/webhooks.scenarios";
import { CAP_MS, harness, useDeliveryRig } from "../support/webhook-harness";
import type { Received } from "../support/webhook-receiver";

const rig = useDeliveryRig();
const HOUR_MS = 3600 * 1000;

/** Which of `secrets` signed `r`. */
function signers(r: Received, secrets: string[]): string[] {
  const at = new Date(Number(r.headers["webhook-timestamp"]) * 1000);
  const listed = r.headers["webhook-signature"]!.split(" ");
  return secrets.filter((secret) => listed.includes(new Webhook(secret).sign(r.headers["webhook-id"]!, at, r.body)));
}

describe("webhook management details", () => {
  it("recovers by instant: a time in the year 10000 is refused, one in 2999 queues nothing", async () => {
    rig.h = await harness({ WEBHOOK_MAX_ATTEMPTS: "1" });
    const at = `${rig.path}/since`;
    rig.receiver.on(at, () => 500);
    const hook = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(at), ["category.created"]);
    await createCategory(rig.h.api, rig.h.key);
    await rig.h.dispatch();
    expect((await rig.h.deliveries(hook.id)).map((d) => d.status)).toEqual(["failed"]);
    const far = await rig.h.api.post(`/webhooks/${hook.id}/recover`, { since: "9999-12-31T20:00:00-05:00" }, { key: rig.h.key });
    expectValidationError(far, ["body.since"]);
    expect((await rig.h.api.post(`/webhooks/${hook.id}/recover`, { since: "2999-01-01T00:00:00Z" }, { key: rig.h.key })).body).toEqual({ queued: 0 });
    expect((await rig.h.api.post(`/webhooks/${hook.id}/recover`, { since: "2000-01-01T00:00:00+14:00" }, { key: rig.h.key })).body).toEqual({ queued: 1 });
  });

  it("signs with every secret a rotation replaced in the last 24 h", async () => {
    const at = `${rig.path}/rotations`;
    const hook = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(at), ["category.created"]);
    const rotate = async () => (await rig.h.api.post<WebhookWithSecretBody>(`/webhooks/${hook.id}/secret/rotate`, {}, { key: rig.h.key })).body.secret;
    const s1 = hook.secret;
    const s2 = await rotate();
    rig.h.advance(HOUR_MS);
    const s3 = await rotate();
    await createCategory(rig.h.api, rig.h.key);
    await rig.h.dispatch();
    rig.h.advance(23 * HOUR_MS + 60_000); // s1's 24 h have ended, s2's not
    await createCategory(rig.h.api, rig.h.key);
    await rig.h.dispatch();
    const [during, later] = rig.receiver.at(at);
    expect(signers(during!, [s3, s2, s1])).toEqual([s3, s2, s1]);
    expect(signers(later!, [s3, s2, s1])).toEqual([s3, s2]);
  });

  it("keeps at most five replaced secrets", async () => {
    const at = `${rig.path}/many`;
    const hook = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(at), ["category.created"]);
    for (let i = 0; i < 7; i++) await rig.h.api.post(`/webhooks/${hook.id}/secret/rotate`, {}, { key: rig.h.key });
    await createCategory(rig.h.api, rig.h.key);
    await rig.h.dispatch();
    expect(rig.receiver.at(at)[0]!.headers["webhook-signature"]!.split(" ")).toHaveLength(6);
  });

  it("refuses an unknown member in the body of resend and test, and takes none or {}", async () => {
    const hook = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(`${rig.path}/bodies`), ["category.created"]);
    const category = await createCategory(rig.h.api, rig.h.key);
    const events = (await rig.h.api.get<{ id: number }[]>("/events?after=0&limit=100", { key: rig.h.key })).body;
    const eventId = events.at(-1)!.id;
    expect(category.id).toBeGreaterThan(0);
    for (const path of [`/webhooks/${hook.id}/test`, `/webhooks/${hook.id}/events/${eventId}/resend`]) {
      expectValidationError(await rig.h.api.post(path, { force: true }, { key: rig.h.key }), ["body.force"]);
      expect((await rig.h.api.post(path, {}, { key: rig.h.key })).status).toBe(202);
      expect((await rig.h.api.post(path, undefined, { key: rig.h.key })).status).toBe(202);
    }
  });

  it("caps the redeliveries queued for one subscription: 409 redelivery_limit_reached, and a recovery queues up to the cap", async () => {
    rig.h = await harness({ WEBHOOK_MAX_REDELIVERIES: "3", WEBHOOK_MAX_ATTEMPTS: "1" });
    const at = `${rig.path}/capped`;
    rig.receiver.on(at, () => 500);
    const hook = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(at), ["category.created"]);
    const other = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(`${rig.path}/other`), ["category.created"]);
    for (let i = 0; i < 3; i++) await createCategory(rig.h.api, rig.h.key);
    await rig.h.dispatch(); // three given up
    const since = "2000-01-01T00:00:00Z";
    expect((await rig.h.api.post(`/webhooks/${hook.id}/test`, undefined, { key: rig.h.key })).status).toBe(202);
    expect((await rig.h.api.post(`/webhooks/${hook.id}/recover`, { since }, { key: rig.h.key })).body).toEqual({ queued: 2 });
    const refused = await rig.h.api.post<{ code: string; status: number; message: string }>(`/webhooks/${hook.id}/test`, undefined, { key: rig.h.key });
    expect([refused.status, refused.body.code, refused.body.status]).toEqual([409, "redelivery_limit_reached", 409]);
    expect(refused.body.message).toMatch(/3 redeliveries/);
    expect((await rig.h.api.post(`/webhooks/${hook.id}/recover`, { since }, { key: rig.h.key })).status).toBe(409);
    // Another subscription's own room is untouched.
    expect((await rig.h.api.post(`/webhooks/${other.id}/test`, undefined, { key: rig.h.key })).status).toBe(202);
    rig.h.advance(CAP_MS);
    await rig.h.dispatch(); // sent (and given up again): the room is back
    expect((await rig.h.api.post(`/webhooks/${hook.id}/test`, undefined, { key: rig.h.key })).status).toBe(202);
  });
});
