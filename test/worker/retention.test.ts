/**
 * Retention from the real Worker entry (workerd + sqld): the hourly Cron
 * Trigger (`0 * * * *`, run on demand through `/__scheduled`) prunes what is
 * older than EVENT_RETENTION_DAYS. Checked on a revoked key, the one kind of
 * row no other Worker test keeps alive; the test waits for the row to go
 * (event-driven polling of the database), never for a fixed time.
 */
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiKeys } from "../../src/db/schema";
import { connect, uniqueName, type ApiClient } from "../support/client";
import { queries } from "../support/database";
import { workerTarget, type WorkerTarget } from "../support/worker-target";

let target: WorkerTarget;
let api: ApiClient;
beforeAll(async () => {
  target = await workerTarget();
  api = await connect(target);
});
afterAll(async () => {
  await target?.close();
});

/** Resolves once `check` is true, polling every 50 ms; rejects after `timeoutMs`. */
async function until(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not true within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("retention on the Worker", () => {
  it("the hourly Cron Trigger deletes a key revoked before the retention period, and keeps one revoked since", async () => {
    const signUp = await api.post("/accounts", { name: "Retained", email: `${uniqueName("ret").replace(/\W+/g, "-")}@example.com` });
    expect(signUp.status).toBe(201);
    const key = signUp.body.apiKey.key as string;
    const old = (await api.post("/accounts/me/keys", { name: "old" }, { key })).body;
    const recent = (await api.post("/accounts/me/keys", { name: "recent" }, { key })).body;
    for (const k of [old, recent]) expect((await api.request("DELETE", `/accounts/me/keys/${k.id}`, undefined, { key })).status).toBe(204);
    // Revoked 31 days ago (the default retention is 30 days).
    await queries(target.db)
      .update(apiKeys)
      .set({ revokedAt: new Date(Date.now() - 31 * 24 * 60 * 60 * 1000).toISOString() })
      .where(eq(apiKeys.id, old.id));
    const exists = async (id: number) => (await queries(target.db).select({ id: apiKeys.id }).from(apiKeys).where(eq(apiKeys.id, id))).length > 0;

    const cron = await fetch(`${target.url}/__scheduled?cron=0+*+*+*+*`);
    await cron.body?.cancel();
    await until(async () => !(await exists(old.id)));
    expect(await exists(recent.id)).toBe(true);
    expect((await api.get("/accounts/me", { key })).status).toBe(200);
  });
});
