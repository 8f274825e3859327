/**
 * The Worker's queued webhook runs (wrangler.toml `WEBHOOK_RUNS`, docs/webhooks.md#workers): a retry is sent at its due time by a run the
 * queue starts, with no write and no Cron Trigger after the failed attempt (the local Worker runs no cron unless asked); what a run whose
 * send slots are full leaves is sent by a queued run at once. A Worker of this file's own, with retries due after about a second and
 * attempts that time out after 8 s (before the 10 s message kept ahead of a run).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type ApiClient } from "../support/client";
import { Receiver, verified } from "../support/webhook-receiver";
import { ownWorkerTarget, type WorkerTarget } from "../support/worker-target";
import { createCategory } from "../scenarios/categories.scenarios";
import { subscribe, type DeliveryBody } from "../scenarios/webhooks.scenarios";

/** The first retry waits between half of this and all of it (equal jitter), ms. */
const RETRY_BASE_MS = 1_000;
/** An attempt's timeout, ms: shorter than the 10 s ahead of a run at which a message follows it in case it dies. */
const TIMEOUT_MS = 8_000;

let target: WorkerTarget;
let api: ApiClient;
let receiver: Receiver;
beforeAll(async () => {
  target = await ownWorkerTarget({ WEBHOOK_RETRY_BASE_MS: String(RETRY_BASE_MS), WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS) });
  api = await connect(target);
  receiver = await Receiver.start();
}, 60_000);
afterAll(async () => {
  await receiver?.close();
  await target?.close();
});

describe("webhook runs the Worker queues", () => {
  it("sends a retry at its due time, with no write or cron after the failed attempt", async () => {
    const path = "/worker/queued-retry";
    receiver.on(path, (n) => (n === 1 ? 503 : 204));
    const hook = await subscribe(api, target.staffKey, receiver.url(path), ["category.created"]);
    const category = await createCategory(api, target.staffKey);
    await receiver.waitFor(path, 2);
    const [first, second] = receiver.at(path).map((r) => ({ status: r.status, event: verified(r, hook.secret), id: r.headers["webhook-id"] }));
    expect([first?.status, second?.status]).toEqual([503, 204]);
    expect(second?.event).toEqual(first?.event);
    expect(second?.id).toBe(first?.id);
    expect(first?.event.data).toEqual(category);
    // Recorded by the queued run: delivered at the second attempt.
    for (let deliveries: DeliveryBody[] = []; ; await new Promise((resolve) => setTimeout(resolve, 50))) {
      deliveries = (await api.get<DeliveryBody[]>(`/webhooks/${hook.id}/deliveries`, { key: target.staffKey })).body;
      if (deliveries[0]?.status !== "delivered") continue;
      expect(deliveries.map((d) => [d.eventId, d.status, d.attempts])).toEqual([[first?.event.id, "delivered", 2]]);
      break;
    }
    expect((await api.delete(`/webhooks/${hook.id}`, { key: target.staffKey })).status).toBe(204);
  });

  it("sends to a fifth subscription after one write whose run four hanging receivers fill", async () => {
    const hanging = [1, 2, 3, 4].map((n) => `/worker/queued-hang-${n}`);
    const hooks = [];
    for (const path of hanging) hooks.push(await subscribe(api, target.staffKey, receiver.on(path, () => "hang").url(path), ["category.created"]));
    const fast = await subscribe(api, target.staffKey, receiver.url("/worker/queued-fifth"), ["category.created"]);
    const category = await createCategory(api, target.staffKey);
    await receiver.waitFor("/worker/queued-fifth", 1);
    expect(verified(receiver.at("/worker/queued-fifth")[0]!, fast.secret).data).toEqual(category);
    // The first run's attempts to the hanging receivers are still out (they time out after TIMEOUT_MS): none is recorded yet.
    for (const hook of hooks) expect((await api.get<DeliveryBody[]>(`/webhooks/${hook.id}/deliveries`, { key: target.staffKey })).body).toEqual([]);
    for (const hook of [...hooks, fast]) expect((await api.delete(`/webhooks/${hook.id}`, { key: target.staffKey })).status).toBe(204);
  });
});
