/**
 * Database cost at realistic size (docs/database-cost.md): the app on sqld over
 * a generated dataset (test/support/cost-suite.ts), every operation of the
 * served document measured with sqld's own counters, each against its budget
 * in docs/database-cost.md ("Budgets"); the background jobs are in
 * dispatch-cost.test.ts. One `it` per operation; the table of every
 * measurement is printed at the end.
 */
import { describe, expect, it } from "vitest";
import { MAX_WEBHOOKS } from "../../src/services/webhooks/subscriptions";
import {
  db,
  deletedBy,
  dispatch,
  ids,
  judge,
  MAX_DELETED,
  newApp,
  nextPage,
  readBudget,
  receiver,
  returnedBy,
  SCALE,
  send,
  table,
  useCostSuite,
  warm,
  type Who,
} from "../support/cost-suite";
import { costliest, rowsChanged } from "../support/database-cost";

useCostSuite();

/** Reads: [operation, who, path]. The operation names the document's method and path template first. */
const READS: [string, Who, () => string | Promise<string>][] = [
  ["GET /pets", "anon", () => "/pets"],
  ["GET /pets?status=sold", "anon", () => "/pets?status=sold"],
  ["GET /pets?status=available", "anon", () => "/pets?status=available"],
  ["GET /pets?status=pending", "anon", () => "/pets?status=pending"],
  ["GET /pets?categoryId=", "anon", () => `/pets?categoryId=${ids.category}`],
  ["GET /pets?categoryId=&status=available", "anon", () => `/pets?categoryId=${ids.category}&status=available`],
  ["GET /pets?categoryId=&status=pending", "anon", () => `/pets?categoryId=${ids.category}&status=pending`],
  ["GET /pets?id=×5", "anon", () => `/pets?${[3, 333, 3333, 7777, 9999].map((id) => `id=${id}`).join("&")}`],
  ["GET /pets page 2", "anon", () => nextPage("/pets", "anon")],
  ["GET /pets?status=available page 2", "anon", () => nextPage("/pets?status=available", "anon")],
  ["GET /pets?categoryId=&status=sold page 2", "anon", () => nextPage(`/pets?categoryId=${ids.category}&status=sold`, "anon")],
  ["GET /pets/{petId}", "anon", () => `/pets/${ids.pet}`],
  ["GET /categories", "anon", () => "/categories"],
  ["GET /categories/{categoryId}", "anon", () => `/categories/${ids.category}`],
  ["GET /store/inventory", "anon", () => "/store/inventory"],
  ["GET /store/inventory?status=available", "anon", () => "/store/inventory?status=available"],
  ["GET /store/inventory?status=pending", "anon", () => "/store/inventory?status=pending"],
  ["GET /store/inventory?status=sold", "anon", () => "/store/inventory?status=sold"],
  ["GET /store/inventory?petId=×3", "anon", () => `/store/inventory?petId=${ids.pet}&petId=${ids.stockA}&petId=${ids.orderPet}`],
  ["GET /store/inventory?status=available page 2", "anon", () => nextPage("/store/inventory?status=available", "anon")],
  ["GET /store/inventory/{petId}", "anon", () => `/store/inventory/${ids.pet}`],
  ["GET /store/orders (staff)", "staff", () => "/store/orders"],
  ["GET /store/orders?complete=false (staff)", "staff", () => "/store/orders?complete=false"],
  ["GET /store/orders?complete=true (staff)", "staff", () => "/store/orders?complete=true"],
  ["GET /store/orders?petId= (staff)", "staff", () => `/store/orders?petId=${ids.orderPet}`],
  ["GET /store/orders?petId=&complete=false (staff)", "staff", () => `/store/orders?petId=${ids.openOrderPet}&complete=false`],
  ["GET /store/orders?complete=false page 2 (staff)", "staff", () => nextPage("/store/orders?complete=false", "staff")],
  ["GET /store/orders (customer)", "customer", () => "/store/orders"],
  ["GET /store/orders?petId= (customer)", "customer", () => `/store/orders?petId=${ids.customerPet}`],
  ["GET /store/orders?complete=false (customer)", "customer", () => "/store/orders?complete=false"],
  ["GET /store/orders page 2 (customer)", "customer", () => nextPage("/store/orders", "customer")],
  ["GET /store/orders/{orderId} (staff)", "staff", () => `/store/orders/${ids.order}`],
  ["GET /store/orders/{orderId} (customer)", "customer", () => `/store/orders/${ids.customerOrder}`],
  ["GET /events", "staff", () => "/events"],
  ["GET /events?after=", "staff", () => `/events?after=${ids.recentEvent}`],
  ["GET /events?after= page 2", "staff", () => nextPage(`/events?after=${ids.recentEvent}`, "staff")],
  ["GET /webhooks", "staff", () => "/webhooks"],
  ["GET /webhooks/{webhookId}", "staff", () => "/webhooks/1"],
  ["GET /webhooks/{webhookId}/deliveries", "staff", () => "/webhooks/1/deliveries"],
  ["GET /webhooks/{webhookId}/deliveries?status=delivered", "staff", () => "/webhooks/1/deliveries?status=delivered"],
  ["GET /webhooks/{webhookId}/deliveries?status=failed", "staff", () => "/webhooks/1/deliveries?status=failed"],
  ["GET /webhooks/{webhookId}/deliveries?status=pending", "staff", () => "/webhooks/1/deliveries?status=pending"],
  ["GET /webhooks/{webhookId}/deliveries page 2", "staff", () => nextPage("/webhooks/1/deliveries", "staff")],
  ["GET /webhooks/{webhookId}/deliveries?status=failed page 2", "staff", () => nextPage("/webhooks/1/deliveries?status=failed", "staff")],
  ["GET /accounts/me", "staff", () => "/accounts/me"],
  ["GET /accounts/me/keys", "staff", () => "/accounts/me/keys"],
  ["GET /health", "anon", () => "/health"],
  ["GET /openapi.json", "anon", () => "/openapi.json"],
  ["GET /docs", "anon", () => "/docs"],
];

/** A staff POST with an Idempotency-Key (its first request): `op` is "POST /path". */
const keyed = (op: string, body: unknown) =>
  ({ op: `${op} (Idempotency-Key)`, who: "staff", path: () => op.slice(5), body: () => body, headers: { "Idempotency-Key": op } }) as const;

/** Writes, in order (later ones address what earlier ones created: `save` names the created id). */
const WRITES: { op: string; who: Who; path: () => string; body?: () => unknown; save?: string; headers?: Record<string, string> }[] = [
  { op: "POST /accounts", who: "anon", path: () => "/accounts", body: () => ({ name: "Cost Test", email: "cost-test@example.com" }) },
  { op: "POST /accounts/me/keys", who: "staff", path: () => "/accounts/me/keys", body: () => ({ name: "spare" }), save: "key" },
  keyed("POST /accounts/me/keys", { name: "again" }),
  { op: "DELETE /accounts/me/keys/{keyId}", who: "staff", path: () => `/accounts/me/keys/${ids.key}` },
  { op: "POST /categories", who: "staff", path: () => "/categories", body: () => ({ name: "Measured" }), save: "newCategory" },
  keyed("POST /categories", { name: "Again" }),
  { op: "PATCH /categories/{categoryId}", who: "staff", path: () => `/categories/${ids.newCategory}`, body: () => ({ description: "Measured" }) },
  { op: "POST /pets", who: "staff", path: () => "/pets", body: () => ({ name: "Measured", categoryId: ids.category }), save: "newPet" },
  keyed("POST /pets", { name: "Again", categoryId: 1 }),
  { op: "PUT /pets/{petId}", who: "staff", path: () => `/pets/${ids.newPet}`, body: () => ({ name: "Measured", categoryId: ids.category, status: "pending" }) },
  { op: "PATCH /pets/{petId}", who: "staff", path: () => `/pets/${ids.newPet}`, body: () => ({ status: "available" }) },
  { op: "DELETE /pets/{petId}", who: "staff", path: () => `/pets/${ids.newPet}` },
  { op: "DELETE /categories/{categoryId}", who: "staff", path: () => `/categories/${ids.newCategory}` },
  { op: "PUT /store/inventory/{petId}", who: "staff", path: () => `/store/inventory/${ids.stockC}`, body: () => ({ quantity: 6 }) },
  { op: "POST /store/orders", who: "customer", path: () => "/store/orders", body: () => ({ petId: ids.stockC, quantity: 1 }), save: "newOrder" },
  {
    op: "POST /store/orders (Idempotency-Key)",
    who: "customer",
    path: () => "/store/orders",
    body: () => ({ petId: ids.stockC, quantity: 1 }),
    headers: { "Idempotency-Key": "cost-order" },
    save: "newOrder2",
  },
  { op: "PATCH /store/orders/{orderId}", who: "staff", path: () => `/store/orders/${ids.newOrder}`, body: () => ({ complete: true }) },
  { op: "DELETE /store/orders/{orderId}", who: "customer", path: () => `/store/orders/${ids.newOrder2}` },
  { op: "POST /webhooks", who: "staff", path: () => "/webhooks", body: () => ({ url: receiver.url("/hook/new"), events: ["pet.deleted"] }), save: "newHook" },
  { op: "PATCH /webhooks/{webhookId}", who: "staff", path: () => `/webhooks/${ids.newHook}`, body: () => ({ events: ["pet.deleted", "pet.created"] }) },
  { op: "POST /webhooks/{webhookId}/secret/rotate", who: "staff", path: () => `/webhooks/${ids.newHook}/secret/rotate`, body: () => ({}) },
  { op: "POST /webhooks/{webhookId}/events/{eventId}/resend", who: "staff", path: () => `/webhooks/${ids.newHook}/events/${ids.petDeleted}/resend` },
  { op: "POST /webhooks/{webhookId}/recover", who: "staff", path: () => `/webhooks/1/recover`, body: () => ({ since: "2026-11-19T00:00:00Z" }) },
  { op: "POST /webhooks/{webhookId}/test", who: "staff", path: () => `/webhooks/${ids.newHook}/test` },
  { op: "DELETE /webhooks/{webhookId}", who: "staff", path: () => `/webhooks/${ids.newHook}` },
];

it("measures every operation of the served document", async () => {
  const doc = (await send(newApp(), "GET", "/openapi.json", "anon")).body as { paths: Record<string, Record<string, unknown>> };
  const served = Object.entries(doc.paths).flatMap(([path, item]) =>
    ["get", "put", "post", "patch", "delete"].filter((m) => m in item).map((m) => `${m.toUpperCase()} ${path}`),
  );
  const measured = new Set([...READS.map(([op]) => op), ...WRITES.map((w) => w.op)].map((op) => op.split(/[ ?]/).slice(0, 2).join(" ")));
  expect(served.filter((op) => !measured.has(op))).toEqual([]);
});

describe("reads: ≤ 3 × (rows returned + 10) rows read, nothing written (warm key cache)", () => {
  for (const [op, who, path] of READS) {
    it(op, async () => {
      const target = await path();
      const { value: res, cost } = await db.meter.measure(() => send(warm, "GET", target, who));
      expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(200);
      const returned = returnedBy(res.body);
      judge(op, returned, cost, readBudget(returned));
    });
  }
});

describe("a key lookup on a fresh app (empty key cache), the key used 30 s ago: ≤ 33 read, 0 written", () => {
  for (const who of ["staff", "customer"] as const) {
    it(`GET /accounts/me (${who}, cold key cache)`, async () => {
      const { value: res, cost } = await db.meter.measure(() => send(newApp(), "GET", "/accounts/me", who));
      expect(res.status).toBe(200);
      judge(`GET /accounts/me (${who}, cold key cache)`, 1, cost, readBudget(1));
    });
  }
});

describe("writes: ≤ 40 + 5 × rows changed, read and written", () => {
  for (const w of WRITES) {
    it(w.op, async () => {
      const method = w.op.split(" ")[0]!;
      const failedBefore = await db.scalar("SELECT count(*) FROM webhook_deliveries WHERE webhook_id = 1 AND status = 'failed'");
      const before = await db.counts();
      const { value: res, cost } = await db.meter.measure(() => send(warm, method, w.path(), w.who, w.body?.(), w.headers));
      expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBeLessThan(300);
      if (w.save) ids[w.save] = Number((res.body as { id?: number }).id);
      if (w.op === "DELETE /pets/{petId}") ids.petDeleted = await db.scalar("SELECT max(id) FROM events WHERE type = 'pet.deleted'");
      const changed = rowsChanged(before, await db.counts());
      // Creating a subscription counts the existing ones (at most MAX_WEBHOOKS) against that limit; recovering reads the
      // subscription's given-up entries (kept 7 days) and their events.
      const extra = w.op === "POST /webhooks" ? MAX_WEBHOOKS : w.op.endsWith("/recover") ? 3 * failedBefore : 0;
      judge(w.op, `${changed} changed`, cost, { read: 40 + 5 * changed + extra, written: 40 + 5 * changed });
    });
  }
});

describe(`no statement deletes more than ${MAX_DELETED} rows`, () => {
  it("DELETE /webhooks/{webhookId} with a long delivery log, and the dispatch run after it", async () => {
    const log = await db.scalar("SELECT count(*) FROM webhook_deliveries WHERE webhook_id = 2");
    if (SCALE >= 1) expect(log).toBeGreaterThanOrEqual(3000);
    const before = await db.counts();
    const { value: res, cost } = await db.meter.measure(() => send(warm, "DELETE", "/webhooks/2", "staff"));
    expect(res.status).toBe(204);
    const changed = rowsChanged(before, await db.counts());
    const { cost: after } = await db.meter.measure(dispatch); // deletes left to background rounds run here
    const deletes = [...cost.statements, ...after.statements].filter((s) => deletedBy(s) > 0);
    const most = Math.max(0, ...deletes.map(deletedBy));
    const budget = { read: 40 + 5 * changed, written: 40 + 5 * changed, label: `r,w≤${40 + 5 * changed}, ≤${MAX_DELETED}/DELETE` };
    judge(`DELETE /webhooks/{webhookId} (${log} deliveries; ${deletes.length} DELETEs, most ${most})`, `${changed} changed`, cost, budget);
    table.at(-1)!.ok &&= most <= MAX_DELETED;
    const big = deletes.filter((s) => deletedBy(s) > MAX_DELETED);
    expect(most, `DELETE statements over the bound:\n${costliest({ rowsRead: 0, rowsWritten: 0, statements: big })}`).toBeLessThanOrEqual(MAX_DELETED);
  });

  it("in every statement this file measured", () => {
    const big = db.meter.log.filter((s) => deletedBy(s) > MAX_DELETED).map((s) => `${deletedBy(s)} rows: ${s.sql.slice(0, 200)}`);
    expect(big).toEqual([]);
  });
});
