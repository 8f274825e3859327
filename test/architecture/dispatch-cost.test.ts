/**
 * Database cost of the background jobs at realistic size (docs/database-cost.md#budgets, issue 38): the
 * newest migration once, retention, and webhook dispatch runs — idle, after an order, with 49 and 500
 * subscriptions, a lone delivery, a burst, a failed attempt — each measured with sqld's own counters
 * against its budget, on a dataset of this file's own (test/support/cost-suite.ts).
 */
import { beforeAll, describe, expect, it } from "vitest";
import { pruneExpired } from "../../src/services/retention";
import { SubscribedTypes } from "../../src/services/webhooks/interest";
import { MAX_WEBHOOKS } from "../../src/services/webhooks/subscriptions";
import { config, db, dispatch, ids, judge, NOW, receiver, send, table, useCostSuite, warm } from "../support/cost-suite";
import { type Cost, rowsChanged } from "../support/database-cost";

useCostSuite();

/**
 * Rows a lone delivery writes (docs/database-cost.md#budgets): the frontier row twice (the range of new events taken, then closed) and the
 * log entry. A subscription at the frontier is served from the range, its own row unwritten unless its turn leaves it behind.
 */
const LONE = 3;

describe("background work", () => {
  let afterOrder: Cost | undefined;

  /** Place `orders` orders (not measured), then measure one dispatch run; the receiver answers 204 unless told otherwise. */
  async function orderThenDispatch(petId: number, orders = 1, options: { rangeMs?: number } = {}) {
    for (let i = 0; i < orders; i++) expect((await send(warm, "POST", "/store/orders", "customer", { petId, quantity: 1 })).status).toBe(201);
    const before = await db.scalar("SELECT count(*) FROM webhook_deliveries");
    const { value: report, cost } = await db.meter.measure(() => dispatch(options));
    const entries = (await db.scalar("SELECT count(*) FROM webhook_deliveries")) - before;
    expect.soft(report.attempted, "every attempt leaves one new log entry (first attempts)").toBe(entries);
    return { report, cost };
  }

  /** The budgets of a dispatch run (docs/database-cost.md#budgets): ≤ 20 rows read per attempt + 40; the frontier, and per subscription sent to its claim (with its due-time index entry), release and entry. */
  function judgeRun(operation: string, attempted: number, cost: Cost, written = 2 + attempted) {
    judge(operation, `${attempted} sent`, cost, { read: 20 * attempted + 40, written, label: `r≤20/sent+40 w≤${written}` });
  }

  /**
   * A run that serves new events to subscriptions at the frontier as one range (docs/database-cost.md#budgets): ≤ 2 rows read per delivery
   * (its entry: the subscription's row, and its key checked), 5 per subscription (read once to take the range, its row and its place in
   * the range for the turn, its release) + 30 (the probes, the range's events, taking and closing it).
   */
  function judgeRangeRun(operation: string, report: { attempted: number; subscriptions: Record<number, unknown> }, cost: Cost) {
    const served = Object.keys(report.subscriptions).length;
    const read = 2 * report.attempted + 5 * served + 30;
    judge(`${operation}: as one range`, `${report.attempted} sent to ${served}`, cost, { read, written: 2 + report.attempted, label: "r≤2/sent+5/sub+30" });
  }

  /** Measure a background job that deletes rows: ≤ 20 rows read per row deleted, + 20. */
  async function pruning(operation: string, job: () => Promise<unknown>): Promise<number> {
    const before = await db.counts();
    const { cost } = await db.meter.measure(job);
    const deleted = rowsChanged(before, await db.counts());
    judge(operation, `${deleted} deleted`, cost, { read: 20 * deleted + 20, written: Number.POSITIVE_INFINITY, label: "r≤20/deleted+20" });
    return deleted;
  }
  const weekAgo = new Date(NOW.getTime() - 7 * 86_400_000).toISOString();
  const oldFinished = () => db.scalar(`SELECT count(*) FROM webhook_deliveries WHERE status <> 'pending' AND finished_at < '${weekAgo}'`);

  it(`the migration to the delivery log at the floor of rows, once over the dataset`, () => {
    const { name, cost } = db.migration;
    table.push({ operation: `migration ${name} (once)`, returned: "", read: cost.rowsRead, written: cost.rowsWritten, budget: "stated", ok: true });
    expect(cost.rowsWritten).toBeGreaterThan(0);
  });

  it("retention (pruneExpired) reads ≤ 20 per row deleted + 20, and deletes every finished delivery older than 7 days", async () => {
    expect(await oldFinished(), "the dataset has finished deliveries older than 7 days").toBeGreaterThan(0);
    expect(await pruning("pruneExpired (retention)", () => pruneExpired(db.meter.database(), config.eventRetentionDays, NOW))).toBeGreaterThan(0);
    expect(await oldFinished()).toBe(0);
  }, 60_000);

  it("an idle dispatch run (20 subscriptions, nothing due) reads ≤ 3 and writes nothing", async () => {
    const { cost } = await db.meter.measure(dispatch);
    judge("dispatchDue: idle, 20 subscriptions", 0, cost, { read: 3, written: 0 });
  });

  it("a timer's poll reads ≤ 3 even before the process knows what the subscriptions want", async () => {
    const { cost } = await db.meter.measure(() => dispatch({ interest: new SubscribedTypes(), poll: true }));
    judge("dispatchDue: a timer's poll, interest unknown", 0, cost, { read: 3, written: 0 });
  });

  it("the dispatch run after POST /store/orders: ≤ 2 read per delivery + 5 per subscription + 30, ≤ 1 written per delivery + 2", async () => {
    const { report, cost } = await orderThenDispatch(ids.stockA!);
    expect(report.delivered, "the order's events are wanted by the 14 `*` subscriptions").toBeGreaterThanOrEqual(14);
    afterOrder = cost;
    judgeRun("dispatchDue after POST /store/orders", report.attempted, cost);
    judgeRangeRun("dispatchDue after POST /store/orders", report, cost);
  });

  it("29 more subscriptions that do not want the order's events write nothing and read ≤ 1 row each in that run", async () => {
    await addSubscriptions(29, ["category.deleted"]);
    const { report, cost } = await orderThenDispatch(ids.stockB!);
    const baseline = afterOrder ?? { rowsRead: 0, rowsWritten: 0 };
    const extra = { rowsRead: cost.rowsRead - baseline.rowsRead, rowsWritten: cost.rowsWritten - baseline.rowsWritten, statements: cost.statements };
    judge("dispatchDue after POST /store/orders, +29 unwanting subscriptions (extra)", `${report.attempted} sent`, extra, { read: 29, written: 0 });
  });

  it("an idle dispatch run (49 subscriptions) reads ≤ 3 and writes nothing", async () => {
    const { cost } = await db.meter.measure(dispatch);
    judge("dispatchDue: idle, 49 subscriptions", 0, cost, { read: 3, written: 0 });
  });

  it("at 500 subscriptions the run after an order costs what it costs at 50", async () => {
    await addSubscriptions(451, ["category.deleted"]);
    expect(await db.scalar("SELECT count(*) FROM webhooks")).toBe(MAX_WEBHOOKS);
    const { report, cost } = await orderThenDispatch(ids.stockB!);
    judgeRun("dispatchDue after POST /store/orders, 500 subscriptions", report.attempted, cost);
    judgeRangeRun("dispatchDue after POST /store/orders, 500 subscriptions", report, cost);
    const { cost: idle } = await db.meter.measure(dispatch);
    judge("dispatchDue: idle, 500 subscriptions", 0, idle, { read: 3, written: 0 });
  });

  describe("one subscription wanting the order's events (the others want category.deleted)", () => {
    beforeAll(async () => {
      await db.raw.batch(
        [
          "UPDATE webhooks SET events = '[\"category.deleted\"]'",
          "DELETE FROM webhook_event_types",
          "INSERT INTO webhook_event_types (type, webhook_id) SELECT 'category.deleted', id FROM webhooks",
        ],
        "write",
      );
      await addSubscriptions(1, ["order.placed"], "/hook/only");
      expect((await send(warm, "PUT", `/store/inventory/${ids.stockB}`, "staff", { quantity: 100 })).status).toBe(200);
      await dispatch();
    });

    it("a delivery that succeeds at its first attempt writes ≤ 3 rows in all: the range taken and closed, and its log entry", async () => {
      const { report, cost } = await orderThenDispatch(ids.stockB!);
      expect(report).toMatchObject({ attempted: 1, delivered: 1 });
      judgeRun("dispatchDue: one delivery, first attempt", 1, cost, LONE);
    });

    it("a run that delivers a burst of 12 events to one subscription writes ≤ 1 row per delivery + 2 per range of 20 events", async () => {
      const { report, cost } = await orderThenDispatch(ids.stockB!, 12);
      expect(report).toMatchObject({ attempted: 12, delivered: 12 });
      // 12 orders are 24 events (the order and its stock change): two ranges.
      judgeRun("dispatchDue: a burst of 12 to one subscription", 12, cost, 12 + 2 * 2);
    });

    it("a failed attempt writes ≤ 5 rows: its entry, the range, and the subscription's row with its due-time index entry", async () => {
      receiver.on("/hook/only", () => 503);
      const { report, cost } = await orderThenDispatch(ids.stockB!);
      expect(report).toMatchObject({ attempted: 1, retried: 1 });
      judgeRun("dispatchDue: one failed attempt", 1, cost, LONE + 2);
      receiver.on("/hook/only", () => 204);
    });

    it("50 subscriptions, 3 wanting an order's event: ≤ 100 read, ≤ 5 written", async () => {
      // The one above still waits to retry its failed attempt: three new ones want the next order.
      await db.raw.execute(`DELETE FROM webhooks WHERE url = '${receiver.url("/hook/only")}'`);
      await addSubscriptions(3, ["order.placed"], "/hook/three");
      await db.raw.execute(
        "DELETE FROM webhooks WHERE id IN (SELECT id FROM webhooks WHERE id > 20 AND events = '[\"category.deleted\"]' ORDER BY id DESC LIMIT 453)",
      );
      expect(await db.scalar("SELECT count(*) FROM webhooks")).toBe(50);
      const { report, cost } = await orderThenDispatch(ids.stockB!);
      expect(report.delivered).toBe(3);
      judge("dispatchDue after an order: 50 subscriptions, 3 want it", `${report.attempted} sent`, cost, { read: 100, written: 5 });
    });
  });
});

/** Insert `count` subscriptions wanting `types` (uncounted); returns their ids. */
async function addSubscriptions(count: number, types: string[], path = "/hook/narrow"): Promise<number[]> {
  const rs = await db.raw.execute(`WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < ${count})
    INSERT INTO webhooks (url, events, secret, status, created_at, last_event_id)
    SELECT '${receiver.url(path)}', '${JSON.stringify(types)}', 'whsec_${Buffer.alloc(32, 7).toString("base64")}', 'active', '${NOW.toISOString()}', (SELECT coalesce(max(id), 0) FROM events) FROM seq
    RETURNING id`);
  const created = rs.rows.map((row) => Number(row[0]));
  await db.raw.execute(
    `INSERT INTO webhook_event_types (type, webhook_id) SELECT t.value, w.id FROM webhooks w, json_each(w.events) t WHERE w.id IN (${created.join(", ")})`,
  );
  return created;
}
