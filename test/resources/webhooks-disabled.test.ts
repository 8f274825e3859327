/**
 * Previews send no webhooks (docs/deployment.md#previews-one-per-branch): with `WEBHOOKS_ENABLED=false` — set
 * by wrangler.toml's `[env.preview.vars]` — a dispatch pass (what the Worker's
 * after-write nudge and Cron Trigger run, and the Node poller) sends nothing,
 * queues nothing, and leaves the subscription's events for nobody. The
 * preview environment also carries no cron.
 */
import { unstable_readConfig } from "wrangler";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../../scripts/sqld";
import { parseConfig } from "../../src/config";
import { dispatchDue } from "../../src/services/webhooks/dispatch";
import { createCategory } from "../scenarios/categories.scenarios";
import { subscribe, type DeliveryBody } from "../scenarios/webhooks.scenarios";
import { connect } from "../support/client";
import { nodeTarget, TEST_ENV } from "../support/node-target";
import { Receiver } from "../support/webhook-receiver";

let receiver: Receiver;
beforeAll(async () => {
  receiver = await Receiver.start();
});
afterAll(async () => {
  await receiver?.close();
});

/** Subscribe, write, run one dispatch pass with `env`; what reached the receiver and the deliveries recorded. */
async function writeAndDispatch(env: Record<string, string>, path: string) {
  const target = await nodeTarget(env);
  try {
    const api = await connect(target);
    const key = target.staffKey;
    const hook = await subscribe(api, key, receiver.url(path));
    await createCategory(api, key);
    const report = await dispatchDue(target.db, {
      config: parseConfig({ ...TEST_ENV, ...env }),
      now: () => new Date(),
      fetch: (input, init) => fetch(input, init),
    });
    const deliveries = (await api.get<DeliveryBody[]>(`/webhooks/${hook.id}/deliveries?limit=100`, { key })).body;
    return { report, received: receiver.at(path).length, deliveries };
  } finally {
    await target.close();
  }
}

describe("WEBHOOKS_ENABLED=false (previews)", () => {
  it("sends and queues nothing, while the same write is delivered when enabled", async () => {
    const off = await writeAndDispatch({ WEBHOOKS_ENABLED: "false" }, "/off");
    expect(off.report).toEqual({ attempted: 0, delivered: 0, retried: 0, givenUp: 0, subscriptions: {} });
    expect(off.received).toBe(0);
    expect(off.deliveries).toEqual([]);

    const on = await writeAndDispatch({}, "/on");
    expect(on.report.delivered).toBe(1);
    expect(on.received).toBe(1);
  });

  it("is what the preview environment of wrangler.toml sets, with no cron", () => {
    const preview = unstable_readConfig({ config: `${ROOT}/wrangler.toml`, env: "preview" });
    expect(parseConfig(preview.vars as Record<string, string>).webhooks.enabled).toBe(false);
    expect(preview.triggers.crons ?? []).toEqual([]);
    const production = unstable_readConfig({ config: `${ROOT}/wrangler.toml` });
    expect(parseConfig(production.vars as Record<string, string>).webhooks.enabled).toBe(true);
    expect(production.triggers.crons).toEqual(["* * * * *", "0 * * * *"]);
  });
});
