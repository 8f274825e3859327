/**
 * Dispatch after writes (docs/api.md#events-and-webhooks: a write with no event for a subscription
 * starts no delivery work), wired as src/server.ts and src/worker.ts wire it:
 * `nudgeDispatcher` over a `SubscribedTypes` that the dispatch runs teach.
 * The dispatcher runs on its own statement-counting handle over the same
 * database, so "no work" is measured as zero statements sent by it after the
 * write's own batch. A subscription made by another process is simulated by
 * an insert behind the app's back; its events are delivered by the next
 * periodic run (Node poller, Worker cron), and after-write runs see it once
 * the knowledge is older than its maximum age (injected clock, no sleeping).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config";
import type { Database } from "../../src/db/client";
import { nudgeDispatcher } from "../../src/middleware/after-writes";
import { createWebhookDispatcher, type WebhookDispatcher } from "../../src/services/webhooks/dispatch";
import { SubscribedTypes } from "../../src/services/webhooks/interest";
import { generateWebhookSecret } from "../../src/services/webhooks/signing";
import { connect, type ApiClient } from "../support/client";
import { nodeTarget, TEST_ENV, type NodeTarget } from "../support/node-target";
import { Receiver, verified } from "../support/webhook-receiver";
import { createCategory } from "../scenarios/categories.scenarios";
import { createPet } from "../scenarios/pets.scenarios";
import { subscribe } from "../scenarios/webhooks.scenarios";

/** `db` counting the statements it sends (same connection). */
function countStatements(db: Database): { db: Database; count(): number } {
  let statements = 0;
  const counted: Database = {
    execute(statement) {
      statements += 1;
      return db.execute(statement);
    },
    batch(list, mode) {
      statements += list.length;
      return db.batch(list, mode);
    },
  };
  return { db: counted, count: () => statements };
}

const MAX_AGE_MS = 60_000;
const MAX_AGE_PLUS_ONE_MS = MAX_AGE_MS + 1;

interface Rig {
  target: NodeTarget;
  api: ApiClient;
  key: string;
  dispatcher: WebhookDispatcher;
  /** Dispatch runs started after writes so far. */
  runs: Promise<void>[];
  /** Statements the dispatcher has sent so far. */
  dispatchStatements(): number;
  /** Move the knowledge's clock forward, ms. */
  advance(ms: number): void;
}

let receiver: Receiver;
let rig: Rig;

beforeAll(async () => {
  receiver = await Receiver.start();
});
afterAll(async () => {
  await receiver?.close();
});
afterEach(async () => {
  await rig?.dispatcher.stop();
  await rig?.target.close();
});

/** A Node app whose writes nudge a dispatcher through `nudgeDispatcher`; the dispatcher has made its first (periodic) run. */
async function start(): Promise<Rig> {
  let nowMs = Date.now();
  const interest = new SubscribedTypes(MAX_AGE_MS, () => nowMs);
  const runs: Promise<void>[] = [];
  let dispatcher: WebhookDispatcher | undefined;
  const target = await nodeTarget(
    {},
    { afterWrite: [nudgeDispatcher(interest, () => runs.push(dispatcher!.nudge()))], subscriptionsChanged: () => interest.invalidate() },
  );
  const counted = countStatements(target.db);
  dispatcher = createWebhookDispatcher(counted.db, { config: parseConfig(TEST_ENV), interest, log: (line) => expect.fail(line) });
  await dispatcher.nudge();
  const atStart = counted.count();
  return {
    target,
    api: await connect(target),
    key: target.staffKey,
    dispatcher,
    runs,
    dispatchStatements: () => counted.count() - atStart,
    advance: (ms) => {
      nowMs += ms;
    },
  };
}

/** A subscription inserted behind this process's back, as another process (or Worker isolate) would create it. */
async function subscribeElsewhere(db: Database, url: string, events: string[]): Promise<string> {
  const secret = generateWebhookSecret();
  await db.batch(
    [
      {
        sql: "INSERT INTO webhooks (url, events, secret, status, created_at, last_event_id) VALUES (?, ?, ?, 'active', ?, (SELECT coalesce(max(id), 0) FROM events))",
        args: [url, JSON.stringify(events), secret, new Date().toISOString()],
      },
      { sql: "INSERT INTO webhook_event_types (type, webhook_id) SELECT value, last_insert_rowid() FROM json_each(?)", args: [JSON.stringify(events)] },
    ],
    "write",
  );
  return secret;
}

describe("dispatch after writes", () => {
  it("starts no dispatch run for writes when no subscription exists: zero statements after the writes' own batches", async () => {
    rig = await start();
    const category = await createCategory(rig.api, rig.key);
    const pet = await createPet(rig.api, rig.key, category.id);
    expect((await rig.api.put(`/store/inventory/${pet.id}`, { quantity: 3 }, { key: rig.key })).status).toBe(200);
    expect((await rig.api.delete(`/pets/${pet.id}`, { key: rig.key })).status).toBe(204);
    await Promise.all(rig.runs);
    expect(rig.dispatchStatements()).toBe(0);
    expect(rig.runs).toHaveLength(0);
  });

  it("dispatches right after a write with an event a subscription wants, and not after one without", async () => {
    rig = await start();
    const path = "/after-write/wanted";
    const hook = await subscribe(rig.api, rig.key, receiver.url(path), ["category.created"]);
    const category = await createCategory(rig.api, rig.key);
    expect(rig.runs).toHaveLength(1);
    await Promise.all(rig.runs);
    expect(receiver.at(path).map((r) => verified(r, hook.secret))).toMatchObject([{ type: "category.created", data: category }]);

    const before = rig.dispatchStatements();
    await createPet(rig.api, rig.key, category.id);
    expect(rig.runs).toHaveLength(1);
    expect(rig.dispatchStatements()).toBe(before);
  });

  it("forgets what it knew when this process deletes a subscription", async () => {
    rig = await start();
    const hook = await subscribe(rig.api, rig.key, receiver.url("/after-write/deleted"), ["pet.created"]);
    await rig.dispatcher.nudge();
    expect((await rig.api.delete(`/webhooks/${hook.id}`, { key: rig.key })).status).toBe(204);
    await createCategory(rig.api, rig.key);
    // Unknown counts as wanted: one run, which learns that nobody is left.
    expect(rig.runs).toHaveLength(1);
    await Promise.all(rig.runs);
    await createCategory(rig.api, rig.key);
    expect(rig.runs).toHaveLength(1);
  });

  it("a subscription made elsewhere gets every event: from the periodic run, and from after-write runs once the knowledge is too old", async () => {
    rig = await start();
    const path = "/after-write/elsewhere";
    const secret = await subscribeElsewhere(rig.target.db, receiver.url(path), ["category.created"]);
    const first = await createCategory(rig.api, rig.key);
    expect(rig.runs).toHaveLength(0); // stale knowledge: nobody wanted category.created
    await rig.dispatcher.nudge(); // the periodic run (Node poller, Worker cron)
    expect(receiver.at(path).map((r) => verified(r, secret).data)).toEqual([first]);

    const other = await subscribeElsewhere(rig.target.db, receiver.url(`${path}/pets`), ["pet.created"]);
    const pet = await createPet(rig.api, rig.key, first.id);
    expect(rig.runs).toHaveLength(0);
    rig.advance(MAX_AGE_PLUS_ONE_MS);
    const second = await createPet(rig.api, rig.key, first.id);
    expect(rig.runs).toHaveLength(1);
    await Promise.all(rig.runs);
    expect(receiver.at(`${path}/pets`).map((r) => verified(r, other).data)).toEqual([pet, second]);
  });

  it("hands a write's committed events to every listener, in order, before the response", async () => {
    const heard: string[] = [];
    const listener = (name: string) => (c: { res: Response }, committed: readonly { type: string }[]) => {
      heard.push(`${name} ${c.res.status} ${committed.map((event) => event.type).join(",")}`);
    };
    const target = await nodeTarget(
      {},
      { afterWrite: [listener("first"), nudgeDispatcher(new SubscribedTypes(), () => heard.push("nudge")), listener("last")] },
    );
    try {
      const api = await connect(target);
      const category = await createCategory(api, target.staffKey);
      expect(heard).toEqual(["first 201 category.created", "nudge", "last 201 category.created"]);
      // A refused write and a read commit nothing: no listener hears of them.
      expect((await api.post("/categories", { name: category.name }, { key: target.staffKey })).status).toBe(409);
      expect((await api.get("/categories")).status).toBe(200);
      expect(heard).toHaveLength(3);
    } finally {
      await target.close();
    }
  });

  it("a listener that fails is logged; the committed write still answers 201 and the next listener still hears it", async () => {
    const heard: string[] = [];
    const lines: string[] = [];
    const failing = () => {
      throw new Error("purge endpoint down");
    };
    const target = await nodeTarget({}, { afterWrite: [failing, (_c, committed) => void heard.push(committed[0]!.type)], log: (line) => lines.push(line) });
    try {
      const api = await connect(target);
      await createCategory(api, target.staffKey);
      expect(heard).toEqual(["category.created"]);
      expect(lines.some((line) => line.includes("write listener failed") && line.includes("purge endpoint down"))).toBe(true);
    } finally {
      await target.close();
    }
  });
});
