/**
 * Webhooks are bounded (docs/api.md#events-and-webhooks, issues 17 and 38): at most WEBHOOKS_MAX
 * subscriptions (500 by default; 50 here); a `failing` subscription's backlog
 * is no rows (its events wait at its place); delivered and given-up
 * deliveries are pruned by retention after 7 days; a backlog of 50
 * subscriptions × 3,000 events drains through a real server while `/health`
 * keeps answering (its latency is measured by `npm run bench:webhooks`).
 *
 * The dispatcher is driven directly with an injected clock (as in
 * webhook-delivery.test.ts), except in the last test, which runs the real
 * server process and its own background dispatcher.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config";
import { openTestDatabase } from "../support/database";
import { createCategory as createCategoryRow } from "../../src/services/categories.service";
import { createWebhook } from "../../src/services/webhooks/subscriptions";
import { dispatchDue } from "../../src/services/webhooks/dispatch";
import { pruneExpired } from "../../src/services/retention";
import { DELIVERY_RETENTION_MS } from "../../src/services/webhooks/delivery-log";
import { connect, type ApiClient } from "../support/client";
import { nodeTarget, TEST_ENV, type NodeTarget } from "../support/node-target";
import { startServer, UNLIMITED_ENV, type ServerProcess } from "../support/server-process";
import { Receiver } from "../support/webhook-receiver";
import { createCategory } from "../scenarios/categories.scenarios";
import { subscribe, type DeliveryBody } from "../scenarios/webhooks.scenarios";

let receiver: Receiver;
beforeAll(async () => {
  receiver = await Receiver.start();
});
afterAll(async () => {
  await receiver?.close();
});

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** A fresh app with an injected clock; `dispatch` runs one dispatcher pass at that clock. */
async function harness(env: Record<string, string>) {
  let nowMs = Date.now();
  const clock = () => new Date(nowMs);
  const target: NodeTarget = await nodeTarget(env, { clock });
  cleanups.push(() => target.close());
  const config = parseConfig({ ...TEST_ENV, ...env });
  const api = await connect(target);
  const key = target.staffKey;
  return {
    api,
    key,
    advance: (ms: number) => {
      nowMs += ms;
    },
    dispatch: () => dispatchDue(target.db, { config, now: clock, fetch: (input, init) => fetch(input, init) }),
    prune: () => pruneExpired(target.db, config.eventRetentionDays, clock()),
    rows: async (webhookId: number) =>
      (await target.db.execute({ sql: "SELECT count(*) AS n FROM webhook_deliveries WHERE webhook_id = ?", args: [webhookId] })).rows[0]!.n,
    deliveries: async (webhookId: number, status = "") => {
      const res = await api.get<DeliveryBody[]>(`/webhooks/${webhookId}/deliveries?limit=100${status ? `&status=${status}` : ""}`, { key });
      expect(res.status).toBe(200);
      return res.body;
    },
  };
}

describe("webhook bounds", () => {
  it("allows at most WEBHOOKS_MAX subscriptions, also when they are created concurrently: then 409 subscription_limit_reached", async () => {
    const h = await harness({ WEBHOOKS_MAX: "50" });
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, i) => h.api.post("/webhooks", { url: receiver.url(`/cap/${i}`), events: ["*"] }, { key: h.key })),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(50);
    const refused = results.filter((r) => r.status !== 201);
    expect(refused).toHaveLength(10);
    for (const r of refused) {
      expect(r.status).toBe(409);
      expect(r.body).toMatchObject({ code: "subscription_limit_reached", status: 409, message: expect.stringContaining("50") });
    }
    // Deleting one makes room for one.
    const [first] = (await h.api.get<{ id: number }[]>("/webhooks?limit=1", { key: h.key })).body;
    expect((await h.api.delete(`/webhooks/${first!.id}`, { key: h.key })).status).toBe(204);
    expect((await h.api.post("/webhooks", { url: receiver.url("/cap/again"), events: ["*"] }, { key: h.key })).status).toBe(201);
    expect((await h.api.post("/webhooks", { url: receiver.url("/cap/more"), events: ["*"] }, { key: h.key })).status).toBe(409);
  });

  it("keeps a failing subscription's backlog as no rows: its events wait at its place; healthy ones get everything", async () => {
    const h = await harness({ WEBHOOK_MAX_ATTEMPTS: "2", WEBHOOK_RETRY_BASE_MS: "1000", WEBHOOK_RETRY_CAP_MS: "1000" });
    receiver.on("/bound/down", () => 500);
    const down = await subscribe(h.api, h.key, receiver.url("/bound/down"), ["category.created"]);
    const ok = await subscribe(h.api, h.key, receiver.url("/bound/ok"), ["category.created"]);
    await createCategory(h.api, h.key);
    await createCategory(h.api, h.key);
    await h.dispatch(); // attempt 1 of the first delivery fails
    h.advance(2000);
    await h.dispatch(); // attempt 2 fails: given up, `failing`; the next one has failed once and waits
    expect((await h.api.get(`/webhooks/${down.id}`, { key: h.key })).body).toMatchObject({ status: "failing" });
    expect(await h.deliveries(down.id, "pending")).toHaveLength(1);

    for (let i = 0; i < 20; i++) await createCategory(h.api, h.key);
    await h.dispatch();
    expect(await h.deliveries(down.id, "pending")).toHaveLength(1);
    expect(await h.deliveries(ok.id, "delivered")).toHaveLength(22);
    // Its log is one given-up and one pending entry, whatever waits behind them.
    expect(await h.rows(down.id)).toBe(2);
    for (let i = 0; i < 3; i++) await createCategory(h.api, h.key);
    await h.dispatch();
    expect(await h.rows(down.id)).toBe(2);
    expect(await h.deliveries(ok.id, "delivered")).toHaveLength(25);
  });

  it("prunes delivered and given-up deliveries 7 days after they finished (retention), keeps pending ones", async () => {
    const h = await harness({ WEBHOOK_MAX_ATTEMPTS: "3", WEBHOOK_RETRY_BASE_MS: "1000", WEBHOOK_RETRY_CAP_MS: "1000" });
    receiver.on("/prune/down", (n) => (n <= 3 ? 500 : 204));
    const ok = await subscribe(h.api, h.key, receiver.url("/prune/ok"), ["category.created"]);
    const down = await subscribe(h.api, h.key, receiver.url("/prune/down"), ["category.created"]);
    await createCategory(h.api, h.key);
    for (let attempt = 1; attempt <= 3; attempt++) {
      await h.dispatch();
      h.advance(2000);
    }
    expect((await h.deliveries(ok.id)).map((d) => d.status)).toEqual(["delivered"]);
    expect((await h.deliveries(down.id)).map((d) => d.status)).toEqual(["failed"]);

    h.advance(DELIVERY_RETENTION_MS - 60_000);
    await createCategory(h.api, h.key);
    receiver.on("/prune/ok", () => 503);
    await h.dispatch(); // younger than 7 days: kept; the new delivery to `ok` failed once and waits
    expect((await h.deliveries(ok.id)).map((d) => d.status)).toEqual(["delivered", "pending"]);
    expect((await h.deliveries(down.id)).map((d) => d.status)).toEqual(["failed", "delivered"]);

    h.advance(120_000);
    await h.dispatch();
    expect((await h.prune()).deliveries).toBe(2);
    expect((await h.deliveries(ok.id)).map((d) => [d.status, d.attempts])).toEqual([["pending", 2]]);
    expect((await h.deliveries(down.id)).map((d) => d.status)).toEqual(["delivered"]);
  });

  it("drains 50 subscriptions × 3,000 events through the real server while /health keeps answering", { timeout: 120_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "petstore-drain-"));
    const databaseUrl = `file:${join(dir, "drain.db")}`;
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    // The backlog, written through the services before the server starts (HTTP would only be slower).
    const db = await openTestDatabase(databaseUrl);
    for (let i = 0; i < 50; i++) await createWebhook(db, { url: receiver.url(`/drain/${i}`), events: ["*"] }, { allowPrivateTargets: true, now: new Date() });
    for (let i = 0; i < 3000; i++) await createCategoryRow(db, { name: `Drain ${i}` }, new Date());
    await db.close();

    const server: ServerProcess = await startServer({ databaseUrl, env: { ...UNLIMITED_ENV, WEBHOOKS_ALLOW_PRIVATE: "true", WEBHOOKS_MAX: "50" } });
    cleanups.push(() => server.stop());
    const key = server.bootstrapKey!;
    const api: ApiClient = await connect({ name: "node", staffKey: key, fetch: (p, init) => fetch(`${server.url}${p}`, init), close: async () => {} });
    expect((await api.post("/webhooks", { url: receiver.url("/drain/51"), events: ["*"] }, { key })).status).toBe(409);

    // While deliveries drain, /health answers every time, and deliveries keep arriving.
    await receiver.waitFor("/drain/0", 1);
    const drained = () => receiver.received.filter((r) => r.path.startsWith("/drain/")).length;
    const before = drained();
    for (let i = 0; i < 100; i++) {
      const res = await fetch(`${server.url}/health`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ status: "ok" });
    }
    await receiver.waitFor("/drain/49", receiver.at("/drain/49").length + 20);
    expect(drained()).toBeGreaterThan(before);
    // In order per subscription: the ids each receiver got are ascending.
    for (const i of [0, 25, 49]) {
      const ids = receiver.at(`/drain/${i}`).map((r) => (JSON.parse(r.body) as { id: number }).id);
      expect(ids).toEqual([...ids].sort((a, b) => a - b));
    }
  });
});
