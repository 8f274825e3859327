/**
 * Delivery modes (docs/webhooks.md#delivery-modes): `ordering` strict or none with `maxInFlight` attempts at once, each event
 * retried on its own, and a `rateLimit` in deliveries per second; set on create and by PATCH, validated, shown.
 */
import { describe, expect, it } from "vitest";
import { dispatchDue } from "../../src/services/webhooks/dispatch";
import { createCategory } from "../scenarios/categories.scenarios";
import { expectValidationError } from "../scenarios/categories.scenarios";
import type { WebhookBody, WebhookWithSecretBody } from "../scenarios/webhooks.scenarios";
import { CAP_MS, useDeliveryRig } from "../support/webhook-harness";
import { verified } from "../support/webhook-receiver";

const rig = useDeliveryRig();

type ModeBody = WebhookBody & { ordering: string; maxInFlight: number; rateLimit?: number };

async function subscribeWith(at: string, mode: Record<string, unknown>): Promise<WebhookWithSecretBody & ModeBody> {
  const res = await rig.h.api.post<WebhookWithSecretBody & ModeBody>(
    "/webhooks",
    { url: rig.receiver.url(at), events: ["category.created"], ...mode },
    { key: rig.h.key },
  );
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

/** A fetch that takes `ms` before it sends, counting the attempts at once and when each began (ms since the epoch). */
function slowFetch(ms: number) {
  const seen = { inFlight: 0, most: 0, starts: [] as number[] };
  const fetchFn = async (input: string, init: RequestInit) => {
    seen.starts.push(Date.now());
    seen.inFlight += 1;
    seen.most = Math.max(seen.most, seen.inFlight);
    await new Promise((resolve) => setTimeout(resolve, ms));
    try {
      return await fetch(input, init);
    } finally {
      seen.inFlight -= 1;
    }
  };
  return { seen, fetchFn };
}

describe("delivery modes", () => {
  it("shows strict, 10 and no rate limit by default; takes each on create and by PATCH; null removes the limit", async () => {
    const plain = await subscribeWith(`${rig.path}/a`, {});
    expect([plain.ordering, plain.maxInFlight, plain.rateLimit]).toEqual(["strict", 10, undefined]);
    const hook = await subscribeWith(`${rig.path}/b`, { ordering: "none", maxInFlight: 3, rateLimit: 50 });
    expect([hook.ordering, hook.maxInFlight, hook.rateLimit]).toEqual(["none", 3, 50]);
    const changed = await rig.h.api.patch<ModeBody>(`/webhooks/${hook.id}`, { ordering: "strict", rateLimit: null }, { key: rig.h.key });
    expect([changed.status, changed.body.ordering, changed.body.maxInFlight, changed.body.rateLimit]).toEqual([200, "strict", 3, undefined]);
    expect((await rig.h.api.get<ModeBody>(`/webhooks/${hook.id}`, { key: rig.h.key })).body).toMatchObject({ ordering: "strict", maxInFlight: 3 });
  });

  it("refuses a mode out of its bounds, naming the member", async () => {
    for (const [mode, path] of [
      [{ ordering: "fifo" }, "body.ordering"],
      [{ maxInFlight: 0 }, "body.maxInFlight"],
      [{ maxInFlight: 51 }, "body.maxInFlight"],
      [{ rateLimit: 0 }, "body.rateLimit"],
      [{ rateLimit: 1.5 }, "body.rateLimit"],
    ] as const) {
      const res = await rig.h.api.post("/webhooks", { url: rig.receiver.url(`${rig.path}/x`), events: ["*"], ...mode }, { key: rig.h.key });
      expectValidationError(res, [path]);
    }
    const hook = await subscribeWith(`${rig.path}/y`, {});
    expectValidationError(await rig.h.api.patch(`/webhooks/${hook.id}`, { maxInFlight: null }, { key: rig.h.key }), ["body.maxInFlight"]);
  });

  it("with ordering none sends up to maxInFlight at once, and a failing event does not hold back the later ones", async () => {
    const at = `${rig.path}/none`;
    rig.receiver.on(at, (n) => (n === 1 ? 503 : 204));
    const hook = await subscribeWith(at, { ordering: "none", maxInFlight: 4 });
    const created = [];
    for (let i = 0; i < 12; i++) created.push(await createCategory(rig.h.api, rig.h.key));
    const { seen, fetchFn } = slowFetch(40);
    await dispatchDue(rig.h.target.db, { config: rig.h.config, now: rig.h.clock, fetch: fetchFn });
    expect(seen.most).toBe(4);
    const log = await rig.h.deliveries(hook.id);
    expect(log.filter((d) => d.status === "delivered")).toHaveLength(11);
    expect(log.filter((d) => d.status === "pending").map((d) => d.attempts)).toEqual([1]);
    rig.h.advance(CAP_MS);
    await rig.h.dispatch();
    const delivered = rig.receiver
      .at(at)
      .filter((r) => r.status === 204)
      .map((r) => Number(verified(r, hook.secret).data.id));
    expect([...delivered].sort((a, b) => a - b)).toEqual(created.map((c) => c.id));
    const after = await rig.h.deliveries(hook.id);
    expect(after.map((d) => d.status)).toEqual(created.map(() => "delivered"));
    expect(after.map((d) => d.attempts).sort()).toEqual([...created.map(() => 1).slice(1), 2]);
  });

  it("starts at most rateLimit deliveries a second", async () => {
    const at = `${rig.path}/limited`;
    await subscribeWith(at, { ordering: "none", maxInFlight: 10, rateLimit: 20 });
    for (let i = 0; i < 6; i++) await createCategory(rig.h.api, rig.h.key);
    const { seen, fetchFn } = slowFetch(0);
    const began = Date.now();
    await dispatchDue(rig.h.target.db, { config: rig.h.config, now: rig.h.clock, fetch: fetchFn });
    expect(seen.starts).toHaveLength(6);
    // 20 a second: the i-th start is due 50 ms × i after the run began, never sooner. A lower bound only: a busy machine starts
    // one later than due, and the gap after it is then shorter (a check of the gaps failed so, with 21 ms, docs/testing.md#time).
    const early = seen.starts.map((t, i) => ({ start: i, msAfterRunBegan: t - began })).filter(({ start, msAfterRunBegan }) => msAfterRunBegan < start * 50);
    expect(early).toEqual([]);
  });
});
