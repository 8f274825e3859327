/**
 * SSRF by host name from the real Worker entry (workerd + sqld; docs/api.md#events-and-webhooks,
 * docs/webhooks.md "Targets"): where the Worker's `fetch` may reach this
 * machine's loopback and private networks (`wrangler dev`, as here:
 * `WEBHOOKS_EGRESS=host`, wrangler.toml's value), it resolves names on this
 * machine, so a target named by a host NAME is refused unless
 * WEBHOOKS_ALLOW_PRIVATE=true: the attempt is recorded as `private_address`
 * and nothing is sent.
 *
 * The name is this machine's host name (`os.hostname()`), which `/etc/hosts`
 * maps to a loopback address on most Linux systems (`127.0.0.1 vm`, Debian's
 * `127.0.1.1 <host>`): where it is 127.0.0.1, a Worker without the policy
 * delivered to this file's receiver. Wherever it resolves, a Worker without
 * the policy records `dns`, `refused` or delivers, never `private_address`.
 *
 * The run's shared Worker allows private targets (its receivers are on
 * loopback), so this file starts a Worker of its own with the safe
 * configuration, on the same sqld (a few seconds).
 */
import { hostname } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type ApiClient } from "../support/client";
import { Receiver } from "../support/webhook-receiver";
import { ownWorkerTarget, type WorkerTarget } from "../support/worker-target";
import { createCategory } from "../scenarios/categories.scenarios";
import { subscribe, type DeliveryBody } from "../scenarios/webhooks.scenarios";

let target: WorkerTarget;
let api: ApiClient;
let receiver: Receiver;
beforeAll(async () => {
  // One attempt: the refused delivery is given up at once, so no later run retries it.
  target = await ownWorkerTarget({ WEBHOOKS_ALLOW_PRIVATE: "false", WEBHOOK_MAX_ATTEMPTS: "1" });
  api = await connect(target);
  receiver = await Receiver.start();
});
afterAll(async () => {
  await receiver?.close();
  await target?.close();
});

/**
 * The deliveries of subscription `webhookId` once one has been attempted and its
 * outcome recorded (a claim counts the attempt before the outcome is written;
 * polled every 50 ms, at most 10 s).
 */
async function attempted(webhookId: number): Promise<DeliveryBody[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const res = await api.get<DeliveryBody[]>(`/webhooks/${webhookId}/deliveries`, { key: target.staffKey });
    if (res.body.some((d) => d.attempts > 0 && d.status !== "pending")) return res.body;
    if (Date.now() > deadline) throw new Error(`no attempt within 10 s: ${JSON.stringify(res.body)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("webhook targets named by host name, Worker outside Cloudflare", () => {
  it("refuses a name that resolves to this machine: private_address, nothing sent", async () => {
    const port = new URL(receiver.url("/")).port;
    const hook = await subscribe(api, target.staffKey, `http://${hostname()}:${port}/worker/ssrf-name`, ["category.created"]);
    await createCategory(api, target.staffKey);
    const [delivery] = await attempted(hook.id);
    expect(delivery).toMatchObject({ status: "failed", attempts: 1, lastError: "private_address" });
    expect(delivery!.lastStatusCode).toBeUndefined();
    expect(receiver.at("/worker/ssrf-name")).toHaveLength(0);
    expect((await api.delete(`/webhooks/${hook.id}`, { key: target.staffKey })).status).toBe(204);
  });
});
