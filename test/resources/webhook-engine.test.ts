/**
 * The engine's rules on Node (docs/webhooks.md#design): a subscription whose every attempt failed for WEBHOOK_DISABLE_AFTER_HOURS is
 * disabled and resumes in order; a change of types takes its boundary inside its own write batch; the backlog gauge counts the events
 * after a subscription's place that it wants, paused ones included. Real receiver, injected clock.
 */
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { processHolders } from "../../src/runtime/node/holders";
import type { Database } from "../../src/db/client";
import { readBacklogs } from "../../src/services/webhooks/backlog";
import { dispatchDue } from "../../src/services/webhooks/dispatch";
import { CLAIM_MS, type Holders } from "../../src/services/webhooks/hold";
import { updateWebhook } from "../../src/services/webhooks/manage";
import { createCategory } from "../scenarios/categories.scenarios";
import { createPet } from "../scenarios/pets.scenarios";
import { subscribe } from "../scenarios/webhooks.scenarios";
import { harness, useDeliveryRig } from "../support/webhook-harness";
import { verified } from "../support/webhook-receiver";
import { until } from "../support/poll";

const rig = useDeliveryRig();
/** A boot and PID namespace for tokens of this file's processes (Node's holders, src/runtime/node/holders.ts). */
const SPACE = "this-boot.this-namespace";

/**
 * A process that claims what is due (its tokens from `holders`), starts `sends` sends that never return, and then dies: its statements
 * fail from then on. `gone()` ends its sends and awaits its run (which fails: the fault, not the finding).
 */
async function dyingProcess(sends: number, holders?: Holders): Promise<{ gone(): Promise<void> }> {
  const dead = new AbortController();
  let started = 0;
  const never = () => {
    started += 1;
    return new Promise<Response>((_resolve, reject) => dead.signal.addEventListener("abort", () => reject(new Error("gone")), { once: true }));
  };
  const { db } = rig.h.target;
  let alive = true;
  const gone = () => Promise.reject(new Error("the process is gone"));
  const its: Database = {
    execute: (st) => (alive ? db.execute(st) : gone()),
    batch: (sts, mode, summary) => (alive ? db.batch(sts, mode, summary) : gone()),
  };
  const dying = dispatchDue(its, { config: rig.h.config, now: rig.h.clock, fetch: never, holders }).catch(() => undefined);
  await until(async () => started === sends);
  alive = false;
  return {
    gone: async () => {
      dead.abort();
      await dying;
    },
  };
}

describe("webhook engine", () => {
  it("disables a subscription whose every attempt failed for WEBHOOK_DISABLE_AFTER_HOURS, keeps its place, and resumes it in order", async () => {
    await rig.h.target.close();
    rig.h = await harness({ WEBHOOK_DISABLE_AFTER_HOURS: "0.002", WEBHOOK_MAX_ATTEMPTS: "50" });
    const at = `${rig.path}/down`;
    let up = false;
    rig.receiver.on(at, () => (up ? 204 : 503));
    const hook = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(at), ["category.created"]);
    const a = await createCategory(rig.h.api, rig.h.key);
    // Attempts fail for 7.2 s of the injected clock (0.002 h): the attempt after that disables the subscription (backoff ≤ 4 s).
    for (let i = 0; i < 2; i++) {
      expect(await rig.h.dispatch()).toMatchObject({ attempted: 1, retried: 1 });
      expect(await rig.h.webhook(hook.id)).toMatchObject({ enabled: true });
      rig.h.advance(4_000);
    }
    expect(await rig.h.dispatch()).toMatchObject({ attempted: 1, retried: 1 });
    expect(await rig.h.webhook(hook.id)).toMatchObject({ enabled: false, status: "disabled" });
    const b = await createCategory(rig.h.api, rig.h.key);
    rig.h.advance(10_000);
    expect(await rig.h.dispatch()).toMatchObject({ attempted: 0 });
    up = true;
    expect((await rig.h.api.patch(`/webhooks/${hook.id}`, { enabled: true }, { key: rig.h.key })).body).toMatchObject({ enabled: true, status: "active" });
    expect(await rig.h.dispatch()).toMatchObject({ delivered: 2 });
    expect(
      rig.receiver
        .at(at)
        .slice(-2)
        .map((r) => verified(r, hook.secret).data.id),
    ).toEqual([a.id, b.id]);
  });

  it("judges an event committed while a change of types is computed by the types before the change", async () => {
    const at = `${rig.path}/retyped`;
    const hook = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(at), ["category.created"]);
    const { db } = rig.h.target;
    let during: { id: number } | undefined;
    // The fault: a category is created after the change read the subscription, before its write batch.
    const racing: Database = {
      execute: (statement) => db.execute(statement),
      batch: async (statements, mode, summary) => {
        if (mode === "write" && !during) during = await createCategory(rig.h.api, rig.h.key);
        return db.batch(statements, mode, summary);
      },
    };
    await updateWebhook(racing, hook.id, { events: ["pet.created"] }, { allowPrivateTargets: true, now: rig.h.clock() });
    const after = await createCategory(rig.h.api, rig.h.key);
    await rig.h.dispatch();
    const got = rig.receiver.at(at).map((r) => verified(r, hook.secret).data.id);
    expect(got).toEqual([during!.id]);
    expect(got).not.toContain(after.id);
  });

  it("counts a paused subscription's waiting events that it wants as its backlog, with the oldest one's age", async () => {
    const narrow = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(`${rig.path}/narrow`), ["category.created"]);
    const all = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(`${rig.path}/all`), ["*"]);
    for (const id of [narrow.id, all.id]) await rig.h.api.patch(`/webhooks/${id}`, { enabled: false }, { key: rig.h.key });
    const [first] = [await createCategory(rig.h.api, rig.h.key), await createCategory(rig.h.api, rig.h.key), await createCategory(rig.h.api, rig.h.key)];
    await createPet(rig.h.api, rig.h.key, first.id);
    await rig.h.dispatch(); // moves the frontier: the paused subscriptions keep their place
    const backlogs = await readBacklogs(rig.h.target.db, rig.h.clock().getTime() + 5_000);
    expect(backlogs.map(({ id, backlog }) => ({ id, backlog }))).toEqual([
      { id: narrow.id, backlog: 3 },
      { id: all.id, backlog: 4 },
    ]);
    expect(backlogs[0]!.oldestAgeSeconds).toBeGreaterThanOrEqual(5);
  });

  it("holds a dead process's subscriptions only until its claims end (2 s after their last extension); another process then delivers them", async () => {
    const at = [`${rig.path}/a`, `${rig.path}/b`];
    const hooks: { secret: string }[] = [];
    for (const path of at) hooks.push(await subscribe(rig.h.api, rig.h.key, rig.receiver.url(path), ["category.created"]));
    const c = await createCategory(rig.h.api, rig.h.key);
    // The fault: a process claims both subscriptions and dies before any send answers (its sends never return).
    const dead = await dyingProcess(2);
    // Another process: nothing to do while the claims last; 2 s after them (the dead one extends nothing), both are delivered.
    expect(await rig.h.dispatch()).toMatchObject({ attempted: 0 });
    rig.h.advance(CLAIM_MS + 1);
    expect(await rig.h.dispatch()).toMatchObject({ delivered: 2 });
    for (const [i, path] of at.entries()) expect(rig.receiver.at(path).map((r) => verified(r, hooks[i]!.secret).data.id)).toEqual([c.id]);
    await dead.gone();
  });

  it("ends at once what an exited process on this machine held (its pid names no process): another delivers it before its claims end", async () => {
    const path = `${rig.path}/exited`;
    const hook = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(path), ["category.created"]);
    const c = await createCategory(rig.h.api, rig.h.key);
    // The fault: a process whose pid is a child's that has exited claims the subscription, and dies before its send answers.
    const dead = await dyingProcess(1, processHolders(SPACE, spawnSync(process.execPath, ["-e", ""]).pid!));
    // Its claims last 2 s by the clock, which does not move: a process in the same PID namespace finds its pid gone and delivers now.
    const here = processHolders(SPACE);
    const fetchNow = (input: string, init: RequestInit) => fetch(input, init);
    expect(await dispatchDue(rig.h.target.db, { config: rig.h.config, now: rig.h.clock, fetch: fetchNow, holders: here })).toMatchObject({ delivered: 1 });
    expect(rig.receiver.at(path).map((r) => verified(r, hook.secret).data.id)).toEqual([c.id]);
    await dead.gone();
  });

  it("leaves a paused subscription that an exited process held unclaimed and never due, and resumes it in order", async () => {
    const path = `${rig.path}/exited-paused`;
    rig.receiver.on(path, (n) => (n === 1 ? 503 : 204));
    const hook = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(path), ["category.created"]);
    const c = await createCategory(rig.h.api, rig.h.key);
    expect(await rig.h.dispatch()).toMatchObject({ retried: 1 });
    rig.h.advance(10_000);
    // The fault: the retry is claimed by a process that exits while sending; the subscription is paused meanwhile.
    const dead = await dyingProcess(1, processHolders(SPACE, spawnSync(process.execPath, ["-e", ""]).pid!));
    expect((await rig.h.api.patch(`/webhooks/${hook.id}`, { enabled: false }, { key: rig.h.key })).status).toBe(200);
    const fetchNow = (input: string, init: RequestInit) => fetch(input, init);
    expect(await dispatchDue(rig.h.target.db, { config: rig.h.config, now: rig.h.clock, fetch: fetchNow, holders: processHolders(SPACE) })).toMatchObject({
      attempted: 0,
    });
    // Unclaimed and not due: no later run reads or writes it until it is resumed.
    const row = await rig.h.target.db.execute({ sql: "SELECT due_at, lease_token FROM webhooks WHERE id = ?", args: [hook.id] });
    expect({ ...row.rows[0] }).toEqual({ due_at: null, lease_token: null });
    await rig.h.api.patch(`/webhooks/${hook.id}`, { enabled: true }, { key: rig.h.key });
    expect(await rig.h.dispatch()).toMatchObject({ delivered: 1 });
    expect(rig.receiver.at(path).map((r) => verified(r, hook.secret).data.id)).toEqual([c.id, c.id]);
    await dead.gone();
  });

  it("a range's member still sending at its close goes on under its own claim: the others get the next events meanwhile, nothing twice", async () => {
    const [fastAt, slowAt] = [`${rig.path}/fast`, `${rig.path}/slow`];
    const fast = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(fastAt), ["category.created"]);
    const slow = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(slowAt), ["category.created"]);
    const first = await createCategory(rig.h.api, rig.h.key);
    // The fault: the slow receiver answers only when the test says so; the range waits 50 ms for its members.
    let answer = () => {};
    const answered = new Promise<void>((resolve) => (answer = resolve));
    const held = async (input: string, init: RequestInit) => {
      if (input.includes("/slow")) await answered;
      return fetch(input, init);
    };
    const { db } = rig.h.target;
    const running = dispatchDue(db, { config: rig.h.config, now: rig.h.clock, fetch: held, rangeMs: 50 });
    await until(async () => (await db.execute("SELECT lease_token FROM webhook_dispatch")).rows[0]?.lease_token === null);
    const second = await createCategory(rig.h.api, rig.h.key);
    // The running run (or this one) sends the next range to the fast subscriber while the slow one's send is still out.
    await rig.h.dispatch();
    await until(async () => rig.receiver.at(fastAt).length === 2);
    expect(rig.receiver.at(fastAt).map((r) => verified(r, fast.secret).data.id)).toEqual([first.id, second.id]);
    expect(rig.receiver.at(slowAt)).toHaveLength(0);
    answer();
    await running;
    await rig.h.dispatch();
    expect(rig.receiver.at(slowAt).map((r) => verified(r, slow.secret).data.id)).toEqual([first.id, second.id]);
    expect((await rig.h.deliveries(slow.id)).map((d) => [d.eventId, d.status])).toEqual([first.id, second.id].map((id) => [id, "delivered"]));
  });

  it("keeps a range whose close is a second late: no other run sends its events again meanwhile (no duplicate without a crash)", async () => {
    const path = `${rig.path}/late`;
    const hook = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(path), ["category.created"]);
    const c = await createCategory(rig.h.api, rig.h.key);
    // The fault: once its send is answered, the holder's writes (its close, its extensions) reach the database only when released.
    let release = () => {};
    const released = new Promise<void>((resolve) => (release = resolve));
    const { db } = rig.h.target;
    const late = async <T>(write: boolean, run: () => Promise<T>): Promise<T> => {
      if (write && rig.receiver.at(path).length > 0) await released;
      return run();
    };
    const writes = (sql: string) => !/^\s*select/i.test(sql);
    const slow: Database = {
      execute: (st) => late(writes(typeof st === "string" ? st : st.sql), () => db.execute(st)),
      batch: (sts, mode, summary) => late(true, () => db.batch(sts, mode, summary)),
    };
    const holder = dispatchDue(slow, { config: rig.h.config, now: rig.h.clock, fetch: (input, init) => fetch(input, init) });
    await until(async () => rig.receiver.at(path).length === 1);
    // Its writes are 900 ms late: another run finds the range still held and sends nothing.
    rig.h.advance(900);
    expect(await rig.h.dispatch()).toMatchObject({ attempted: 0 });
    release();
    await holder;
    await rig.h.dispatch();
    expect(rig.receiver.at(path).map((r) => verified(r, hook.secret).data.id)).toEqual([c.id]);
    expect((await rig.h.deliveries(hook.id)).map((d) => [d.eventId, d.status, d.attempts])).toEqual([[c.id, "delivered", 1]]);
  });

  it("counts every turn of a subscription in its run's report: 25 events are two turns (20 a turn), 25 delivered", async () => {
    const hook = await subscribe(rig.h.api, rig.h.key, rig.receiver.url(`${rig.path}/many`), ["category.created"]);
    for (let i = 0; i < 25; i++) await createCategory(rig.h.api, rig.h.key);
    expect((await rig.h.dispatch()).subscriptions[hook.id]).toEqual({ delivered: 25, failed: 0, givenUp: 0 });
  });
});
