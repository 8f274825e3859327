/**
 * The dispatch pipeline at the floor of rows (docs/webhooks.md#design, issue 38), on Node with an injected
 * clock: new event types apply from the change on, given-up deliveries are recovered in order, the old
 * secret stops signing 24 h after a rotation, a paused subscription with a retrying head resumes there,
 * and a round that died before its release sends nothing it recorded again.
 */
import { Webhook } from "standardwebhooks";
import type { Database } from "../../src/db/client";
import { dispatchDue } from "../../src/services/webhooks/dispatch";
import { describe, expect, it } from "vitest";
import { createCategory } from "../scenarios/categories.scenarios";
import { subscribe, type WebhookWithSecretBody } from "../scenarios/webhooks.scenarios";
import { CAP_MS, harness, useDeliveryRig } from "../support/webhook-harness";
import { type Received, verified } from "../support/webhook-receiver";

const rig = useDeliveryRig();

/** A claim of subscriptions: a fan-out's or a due one's (src/services/webhooks/claims.ts). */
/** A run's claim: of due subscriptions, or of a range of new events (the fan-out). */
const isClaim = (sql: string) => /^update "webhooks" set "due_at" = \?, "lease_token"|^update "webhook_dispatch" set "event_id" = CASE/.test(sql);
const DAY_MS = 24 * 3600 * 1000;

/** Which of `secrets` signed `r` (its `webhook-signature` list, checked with the reference library's own signing). */
function signers(r: Received, secrets: string[]): string[] {
  const at = new Date(Number(r.headers["webhook-timestamp"]) * 1000);
  const listed = r.headers["webhook-signature"]!.split(" ");
  return secrets.filter((secret) => listed.includes(new Webhook(secret).sign(r.headers["webhook-id"]!, at, r.body)));
}

/** Event ids and types `path` received, verified with `secret`. */
const got = (path: string, secret: string) =>
  rig.receiver.at(path).map((r) => {
    const event = new Webhook(secret).verify(r.body, r.headers) as { id: number; type: string };
    return [event.id, event.type];
  });

describe("dispatch pipeline", () => {
  it("applies new event types to events committed after the change: a removed type stops, an added one starts", async () => {
    const at = `${rig.path}/types`;
    const hook = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(at), ["category.created"]);
    const x = await createCategory(rig.h.api, rig.h.key);
    await rig.h.api.delete(`/categories/${x.id}`, { key: rig.h.key });
    expect((await rig.h.api.patch(`/webhooks/${hook.id}`, { events: ["category.created", "category.deleted"] }, { key: rig.h.key })).status).toBe(200);
    const y = await createCategory(rig.h.api, rig.h.key);
    await rig.h.api.delete(`/categories/${y.id}`, { key: rig.h.key });
    await rig.h.dispatch();
    const types = got(at, hook.secret).map(([, type]) => type);
    // x's deletion was committed before category.deleted was added: not sent.
    expect(types).toEqual(["category.created", "category.created", "category.deleted"]);
  });

  it("recovers given-up deliveries since a time, in order, once", async () => {
    rig.h = await harness({ WEBHOOK_MAX_ATTEMPTS: "2" });
    const at = `${rig.path}/recover`;
    rig.receiver.on(at, () => 500);
    const hook = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(at), ["category.created"]);
    const since = rig.h.clock().toISOString();
    const [a, b] = [await createCategory(rig.h.api, rig.h.key), await createCategory(rig.h.api, rig.h.key)];
    for (let i = 0; i < 6; i++) {
      await rig.h.dispatch();
      rig.h.advance(CAP_MS);
    }
    expect((await rig.h.deliveries(hook.id)).map((d) => d.status)).toEqual(["failed", "failed"]);
    expect((await rig.h.webhook(hook.id)).status).toBe("failing");

    rig.receiver.on(at, () => 204);
    const res = await rig.h.api.post<{ queued: number }>(`/webhooks/${hook.id}/recover`, { since }, { key: rig.h.key });
    expect([res.status, res.body]).toEqual([202, { queued: 2 }]);
    // Asking again before they are sent queues nothing twice.
    expect((await rig.h.api.post(`/webhooks/${hook.id}/recover`, { since }, { key: rig.h.key })).body).toEqual({ queued: 0 });
    await rig.h.dispatch();
    const delivered = rig.receiver
      .at(at)
      .filter((r) => r.status === 204)
      .map((r) => verified(r, hook.secret).data.id);
    expect(delivered).toEqual([a.id, b.id]);
    expect((await rig.h.deliveries(hook.id)).map((d) => [d.status, d.attempts])).toEqual([
      ["delivered", 1],
      ["delivered", 1],
    ]);
    expect((await rig.h.api.post(`/webhooks/${hook.id}/recover`, { since }, { key: rig.h.key })).body).toEqual({ queued: 0 });
  });

  it("signs with both secrets for 24 h after a rotation, then with the new one only", async () => {
    const at = `${rig.path}/rotate`;
    const hook = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(at), ["category.created"]);
    const rotated = (await rig.h.api.post<WebhookWithSecretBody>(`/webhooks/${hook.id}/secret/rotate`, {}, { key: rig.h.key })).body;
    rig.h.advance(DAY_MS - 60_000);
    await createCategory(rig.h.api, rig.h.key);
    await rig.h.dispatch();
    rig.h.advance(120_000);
    await createCategory(rig.h.api, rig.h.key);
    await rig.h.dispatch();
    const [during, after] = rig.receiver.at(at);
    expect(signers(during!, [rotated.secret, hook.secret])).toEqual([rotated.secret, hook.secret]);
    expect(signers(after!, [rotated.secret, hook.secret])).toEqual([rotated.secret]);
  });

  it("parks a paused subscription whose head is retrying, and resumes it at that head", async () => {
    const at = `${rig.path}/park`;
    rig.receiver.on(at, (n) => (n === 1 ? 503 : 204));
    const hook = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(at), ["category.created"]);
    const a = await createCategory(rig.h.api, rig.h.key);
    await rig.h.dispatch(); // a fails once and waits for its retry
    await rig.h.api.patch(`/webhooks/${hook.id}`, { enabled: false }, { key: rig.h.key });
    const b = await createCategory(rig.h.api, rig.h.key);
    rig.h.advance(CAP_MS);
    await rig.h.dispatch(); // paused: parked, nothing sent
    expect(rig.receiver.at(at)).toHaveLength(1);
    const parked = (await rig.h.target.db.execute(`SELECT place FROM webhooks WHERE id = ${hook.id}`)).rows[0]![0];
    expect(parked).toEqual(expect.any(Number));
    await rig.h.api.patch(`/webhooks/${hook.id}`, { enabled: true }, { key: rig.h.key });
    await rig.h.dispatch();
    expect(rig.receiver.at(at).map((r) => verified(r, hook.secret).data.id)).toEqual([a.id, a.id, b.id]);
  });

  it("resumes in order when the resume commits right after a run's claim", async () => {
    const at = `${rig.path}/race`;
    const hook = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(at), ["category.created"]);
    await rig.h.api.patch(`/webhooks/${hook.id}`, { enabled: false }, { key: rig.h.key });
    const a = await createCategory(rig.h.api, rig.h.key);
    await rig.h.dispatch(); // parks the subscription before a
    const b = await createCategory(rig.h.api, rig.h.key);
    // The fault: the resume commits right after the next round's claim.
    const { db } = rig.h.target;
    let resumed = false;
    const resume = async (sql: string) => {
      if (resumed || !isClaim(sql)) return;
      resumed = true;
      expect((await rig.h.api.patch(`/webhooks/${hook.id}`, { enabled: true }, { key: rig.h.key })).status).toBe(200);
    };
    const racing: Database = {
      batch: async (statements, mode) => {
        const result = await db.batch(statements, mode);
        for (const statement of statements) if (typeof statement !== "string") await resume(statement.sql);
        return result;
      },
      execute: async (statement) => {
        const result = await db.execute(statement);
        if (typeof statement !== "string") await resume(statement.sql);
        return result;
      },
    };
    await dispatchDue(racing, { config: rig.h.config, now: rig.h.clock, fetch: (input, init) => fetch(input, init) });
    await rig.h.dispatch();
    expect(resumed).toBe(true);
    expect(rig.receiver.at(at).map((r) => verified(r, hook.secret).data.id)).toEqual([a.id, b.id]);
  });

  it("starts no send 4 s or more into a claim, so the turn ends within the claim; the next claim goes on", async () => {
    const at = `${rig.path}/slow`;
    const hook = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(at), ["category.created"]);
    const created = [];
    for (let i = 0; i < 6; i++) created.push(await createCategory(rig.h.api, rig.h.key));
    const { db } = rig.h.target;
    let claims = 0;
    const counting: Database = {
      batch: (statements, mode) => {
        // A fan-out is one claim, whichever of its statements takes the range.
        if (statements.some((statement) => typeof statement !== "string" && isClaim(statement.sql))) claims += 1;
        return db.batch(statements, mode);
      },
      execute: (statement) => {
        if (typeof statement !== "string" && isClaim(statement.sql)) claims += 1;
        return db.execute(statement);
      },
    };
    // Each send takes 2 s of the injected clock: a turn sends at 0 and 2 s, then leaves the rest to the next claim.
    const slowFetch = async (input: string, init: RequestInit) => {
      const res = await fetch(input, init);
      rig.h.advance(2000);
      return res;
    };
    expect(await dispatchDue(counting, { config: rig.h.config, now: rig.h.clock, fetch: slowFetch })).toMatchObject({ delivered: 6 });
    expect(claims).toBe(3);
    expect(rig.receiver.at(at).map((r) => verified(r, hook.secret).data.id)).toEqual(created.map((c) => c.id));
  });

  it("holds a redelivery for a paused subscription until it resumes", async () => {
    const at = `${rig.path}/held`;
    const hook = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(at), ["category.created"]);
    await rig.h.api.patch(`/webhooks/${hook.id}`, { enabled: false }, { key: rig.h.key });
    expect((await rig.h.api.post(`/webhooks/${hook.id}/test`, undefined, { key: rig.h.key })).status).toBe(202);
    expect(await rig.h.dispatch()).toMatchObject({ attempted: 0 });
    expect(rig.receiver.at(at)).toHaveLength(0);
    await rig.h.api.patch(`/webhooks/${hook.id}`, { enabled: true }, { key: rig.h.key });
    expect(await rig.h.dispatch()).toMatchObject({ attempted: 1, delivered: 1 });
    expect(got(at, hook.secret)).toEqual([[0, "webhook.test"]]);
  });

  it("after a turn that died before its record, its claim ends and the next claim sends its events again (at least once), and goes on", async () => {
    const at = `${rig.path}/lost`;
    const hook = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(at), ["category.created"]);
    const frontier = async () => Number((await rig.h.target.db.execute("SELECT event_id FROM webhook_dispatch")).rows[0]![0]);
    const before = await frontier();
    const a = await createCategory(rig.h.api, rig.h.key);
    await rig.h.dispatch();
    // As if the process died after sending a, before its record: the subscription still at its place, claimed by a claim that ended.
    const ended = new Date(rig.h.clock().getTime() - 1000).toISOString();
    await rig.h.target.db.execute({ sql: "UPDATE webhooks SET place = ?, lease_token = 'lost', due_at = ? WHERE id = ?", args: [before, ended, hook.id] });
    const b = await createCategory(rig.h.api, rig.h.key);
    await rig.h.dispatch();
    expect(rig.receiver.at(at).map((r) => verified(r, hook.secret).data.id)).toEqual([a.id, a.id, b.id]);
  });
});
