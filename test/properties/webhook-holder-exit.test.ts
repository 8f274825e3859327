/**
 * A process killed while it holds a subscription's claim (docs/webhooks.md#design): two servers as `npm start` runs them on one
 * database file; the one whose send is unanswered is SIGKILLed. The other, nudged by a write, finds the holder's pid gone on this
 * machine and delivers before the dead claim would end by its lease (2 s after its last extension).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@libsql/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, startServer, type ServerProcess, UNLIMITED_ENV } from "../support/server-process";
import { until } from "../support/poll";
import { Receiver, verified } from "../support/webhook-receiver";

let dir: string;
let receiver: Receiver;
const servers: ServerProcess[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "petstore-holder-exit-"));
  receiver = await Receiver.start();
});

afterAll(async () => {
  for (const server of servers) if (!server.exited()) await server.kill();
  await receiver?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("a server SIGKILLed while it sends, beside another on the same database", () => {
  it("the other delivers the subscription's events before the dead process's claim would end", async () => {
    const databaseUrl = `file:${join(dir, "petstore.db")}`;
    const env = { ...UNLIMITED_ENV, WEBHOOKS_ALLOW_PRIVATE: "true" };
    const holder = await startServer({ databaseUrl, env });
    servers.push(holder);
    const key = holder.bootstrapKey!;
    // The fault: the first request is never answered, so the holder is still sending when it dies.
    receiver.on("/hook", (n) => (n === 1 ? "hang" : 204));
    const hook = await call<{ secret: string }>(holder.url, "POST", "/webhooks", { url: receiver.url("/hook"), events: ["category.created"] }, { key });
    expect(hook.status).toBe(201);
    const first = await call<{ id: number }>(holder.url, "POST", "/categories", { name: "Before" }, { key });
    await until(() => receiver.arrivals("/hook") === 1);
    // Started now, the other finds the subscription claimed by a live process; its range closed, the holder keeps it as its own claim.
    const other = await startServer({ databaseUrl, env });
    servers.push(other);
    const db = createClient({ url: databaseUrl });
    const claim = async () => (await db.execute("SELECT due_at, lease_token FROM webhooks")).rows[0]!;
    await until(
      async () => (await claim()).lease_token !== null && (await db.execute("SELECT lease_token FROM webhook_dispatch")).rows[0]!.lease_token === null,
    );
    await holder.kill();
    const claimEnds = Date.parse(String((await claim()).due_at));
    const second = await call<{ id: number }>(other.url, "POST", "/categories", { name: "After" }, { key });
    await receiver.waitFor("/hook", 2);
    const deliveredAt = Date.now();
    db.close();
    expect(receiver.at("/hook").map((r) => verified(r, hook.body.secret).data.id)).toEqual([first.body.id, second.body.id]);
    expect(deliveredAt, "delivered after the dead claim ended by its lease").toBeLessThan(claimEnds);
  }, 30_000);
});
