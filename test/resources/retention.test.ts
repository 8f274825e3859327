/**
 * Retention (docs/api.md#events-and-webhooks, src/services/retention.ts) with an injected clock:
 * events and revoked keys older than EVENT_RETENTION_DAYS are deleted in
 * bounded rounds, the newest event and events a delivery refers to are kept,
 * and an `/events` cursor whose following events were deleted is 410
 * `cursor_expired`. Old rows are made through the API at an earlier clock,
 * or inserted (the bulk case) with the schema's own table.
 */
import { eq } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config";
import { apiKeys, events, webhooks } from "../../src/db/schema";
import { MAX_ROUNDS, PRUNE_BATCH, pruneExpired, scheduleRetention } from "../../src/services/retention";
import { connect, type ApiClient } from "../support/client";
import { queries } from "../support/database";
import { nodeTarget, type NodeTarget } from "../support/node-target";

const DAY = 24 * 60 * 60 * 1000;

/** A clock the test moves by hand. */
class ManualClock {
  constructor(public ms: number) {}
  now = (): Date => new Date(this.ms);
  advanceDays(days: number): void {
    this.ms += days * DAY;
  }
}

let target: NodeTarget | undefined;
afterEach(async () => {
  await target?.close();
  target = undefined;
});

async function setup(start: string): Promise<{ api: ApiClient; clock: ManualClock; t: NodeTarget }> {
  const clock = new ManualClock(new Date(start).getTime());
  target = await nodeTarget({}, { clock: clock.now });
  return { api: await connect(target), clock, t: target };
}

const eventIds = async (t: NodeTarget) => (await queries(t.db).select({ id: events.id }).from(events).orderBy(events.id)).map((r) => r.id);

describe("EVENT_RETENTION_DAYS", () => {
  it("defaults to 30 days, and a bad value names the variable", () => {
    expect(parseConfig({}).eventRetentionDays).toBe(30);
    expect(parseConfig({ EVENT_RETENTION_DAYS: "7" }).eventRetentionDays).toBe(7);
    expect(() => parseConfig({ EVENT_RETENTION_DAYS: "soon" })).toThrow(/EVENT_RETENTION_DAYS/);
  });
});

describe("pruning events", () => {
  it("deletes events older than retention, keeps the rest; a cursor into the deleted part is 410 cursor_expired", async () => {
    const { api, clock, t } = await setup("2026-09-01T10:00:00Z");
    const staff = { key: t.staffKey };
    for (let i = 0; i < 3; i++) expect((await api.post("/categories", { name: `Old ${i}` }, staff)).status).toBe(201);
    const old = await eventIds(t);
    clock.advanceDays(20);
    expect((await api.post("/categories", { name: "Recent" }, staff)).status).toBe(201);
    const recent = (await eventIds(t)).at(-1)!;
    clock.advanceDays(11);

    expect(await pruneExpired(t.db, 30, clock.now())).toEqual({ events: 3, keys: 0, idempotency: 0, deliveries: 0, rounds: 1 });
    expect(await eventIds(t)).toEqual([recent]);

    const fromStart = await api.get("/events?after=0", staff);
    expect(fromStart.status).toBe(200);
    expect(fromStart.body.map((e: { id: number }) => e.id)).toEqual([recent]);
    // The client had seen the last deleted event: nothing was missed.
    expect((await api.get(`/events?after=${old.at(-1)}`, staff)).status).toBe(200);
    for (const after of old.slice(0, -1)) {
      const expired = await api.get(`/events?after=${after}`, staff);
      expect(expired.status, JSON.stringify(expired.body)).toBe(410);
      expect(expired.body).toMatchObject({ code: "cursor_expired", status: 410 });
    }
    // A cursor at the newest event is fine.
    expect((await api.get(`/events?after=${recent}`, staff)).body).toEqual([]);
  });

  it("keeps the newest event even when it is old, so the feed can still tell an expired cursor", async () => {
    const { api, clock, t } = await setup("2026-09-01T10:00:00Z");
    for (let i = 0; i < 3; i++) await api.post("/categories", { name: `Only ${i}` }, { key: t.staffKey });
    const ids = await eventIds(t);
    clock.advanceDays(60);
    expect((await pruneExpired(t.db, 30, clock.now())).events).toBe(2);
    expect(await eventIds(t)).toEqual([ids.at(-1)]);
    expect((await api.get(`/events?after=${ids[0]}`, { key: t.staffKey })).status).toBe(410);
  });

  it("prunes events past retention whoever still waits for them: a subscription's place never holds the log", async () => {
    const { api, clock, t } = await setup("2026-09-01T10:00:00Z");
    for (let i = 0; i < 4; i++) await api.post("/categories", { name: `Hooked ${i}` }, { key: t.staffKey });
    const ids = await eventIds(t);
    const [hook] = await queries(t.db)
      .insert(webhooks)
      .values({ url: "https://example.com/h", events: '["*"]', secret: "whsec_x", createdAt: clock.now().toISOString(), enabled: false, place: ids[0]! })
      .returning({ id: webhooks.id });
    expect(hook).toBeDefined();
    clock.advanceDays(31);
    expect((await pruneExpired(t.db, 30, clock.now())).events).toBe(3);
    expect(await eventIds(t)).toEqual(ids.slice(3));
  });

  it("works in bounded rounds: at most PRUNE_BATCH rows per statement, MAX_ROUNDS rounds per run", async () => {
    const { clock, t } = await setup("2026-09-01T10:00:00Z");
    const total = PRUNE_BATCH * MAX_ROUNDS + 300;
    const at = clock.now().toISOString();
    for (let from = 0; from < total; from += 500) {
      const rows = Array.from({ length: Math.min(500, total - from) }, () => ({ type: "category.created" as const, occurredAt: at, data: "{}" }));
      await queries(t.db).insert(events).values(rows);
    }
    clock.advanceDays(31);
    expect(await pruneExpired(t.db, 30, clock.now())).toEqual({ events: PRUNE_BATCH * MAX_ROUNDS, keys: 0, idempotency: 0, deliveries: 0, rounds: MAX_ROUNDS });
    // The next run finishes the job, keeping the newest event.
    expect(await pruneExpired(t.db, 30, clock.now())).toEqual({ events: 299, keys: 0, idempotency: 0, deliveries: 0, rounds: 1 });
    expect(await eventIds(t)).toHaveLength(1);
  });
});

describe("the log stays whole", () => {
  it("deletes a prefix of the log by id: an old event after a younger one waits, so a cursor sees every later event or gets 410", async () => {
    const { clock, t } = await setup("2026-09-01T10:00:00Z");
    const day = (d: number) => new Date(clock.ms + d * DAY).toISOString();
    // Several processes commit events: times need not follow ids (ids 1–2 old, 3 young, 4–6 old, 7 young).
    const times = [day(0), day(0), day(20), day(0), day(0), day(0), day(25)];
    await queries(t.db)
      .insert(events)
      .values(times.map((occurredAt) => ({ type: "category.created" as const, occurredAt, data: "{}" })));
    const ids = await eventIds(t);
    clock.advanceDays(31);
    expect((await pruneExpired(t.db, 30, clock.now())).events).toBe(2);
    expect(await eventIds(t)).toEqual(ids.slice(2));
    const api = await connect(t);
    const after2 = await api.get(`/events?after=${ids[1]}`, { key: t.staffKey });
    expect(after2.body.map((e: { id: number }) => e.id)).toEqual(ids.slice(2));
  });
});

describe("pruning idempotent responses", () => {
  it("deletes stored responses 24 h after their request; younger ones still replay", async () => {
    const { api, clock, t } = await setup("2026-09-01T10:00:00Z");
    const staff = { key: t.staffKey };
    const first = await api.post("/categories", { name: "Once" }, { ...staff, headers: { "Idempotency-Key": "old-key" } });
    expect(first.status).toBe(201);
    clock.ms += 20 * 60 * 60 * 1000;
    expect((await api.post("/categories", { name: "Twice" }, { ...staff, headers: { "Idempotency-Key": "young-key" } })).status).toBe(201);
    clock.ms += 5 * 60 * 60 * 1000;

    expect((await pruneExpired(t.db, 30, clock.now())).idempotency).toBe(1);
    const replay = await api.post("/categories", { name: "Twice" }, { ...staff, headers: { "Idempotency-Key": "young-key" } });
    expect(replay.headers.get("Idempotent-Replayed")).toBe("true");
  });
});

describe("pruning revoked keys", () => {
  it("deletes keys revoked before the retention period; active keys and recently revoked ones stay", async () => {
    const { api, clock, t } = await setup("2026-09-01T10:00:00Z");
    const signUp = await api.post("/accounts", { name: "Keeper", email: "keeper@example.com" });
    const key = signUp.body.apiKey.key as string;
    const early = (await api.post("/accounts/me/keys", { name: "early" }, { key })).body;
    const late = (await api.post("/accounts/me/keys", { name: "late" }, { key })).body;
    expect((await api.request("DELETE", `/accounts/me/keys/${early.id}`, undefined, { key })).status).toBe(204);
    clock.advanceDays(25);
    expect((await api.request("DELETE", `/accounts/me/keys/${late.id}`, undefined, { key })).status).toBe(204);
    clock.advanceDays(6);

    expect((await pruneExpired(t.db, 30, clock.now())).keys).toBe(1);
    const left = (await queries(t.db).select({ id: apiKeys.id }).from(apiKeys).where(eq(apiKeys.accountId, signUp.body.account.id))).map((r) => r.id).sort();
    expect(left).toEqual([signUp.body.apiKey.id, late.id].sort());
    expect((await api.get("/accounts/me", { key })).status).toBe(200);
  });
});

describe("the Node scheduler", () => {
  it("runs once at start and then on its interval; stop() waits for the run in progress", async () => {
    const { api, clock, t } = await setup("2026-09-01T10:00:00Z");
    for (let i = 0; i < 2; i++) await api.post("/categories", { name: `Sched ${i}` }, { key: t.staffKey });
    clock.advanceDays(31);
    const scheduler = scheduleRetention({ db: t.db, config: { eventRetentionDays: 30 }, now: clock.now, intervalMs: 60_000 });
    await scheduler.stop();
    expect(await eventIds(t)).toHaveLength(1);
  });
});
