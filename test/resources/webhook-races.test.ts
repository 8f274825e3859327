/**
 * Management operations racing a dispatch round (docs/webhooks.md#design): each of delete, pause, re-type, rotate and a URL
 * change lands at each step of a round (after its claim, at its reads, during a send, at its recording). No round fails,
 * the other subscription gets every event once and in order, and nothing recorded is sent again.
 */
import { describe, expect, it } from "vitest";
import type { Database } from "../../src/db/client";
import { dispatchDue } from "../../src/services/webhooks/dispatch";
import { createCategory } from "../scenarios/categories.scenarios";
import { subscribe } from "../scenarios/webhooks.scenarios";
import { useDeliveryRig } from "../support/webhook-harness";
import { verified } from "../support/webhook-receiver";

const rig = useDeliveryRig();

type Step = "claim" | "reads" | "send" | "record";
type Operation = "delete" | "pause" | "retype" | "rotate" | "url";

/** Which step a statement of a turn is: its claim, its read of the log, its release (the recording batch). */
function stepOf(sql: string): Step | undefined {
  if (/^update "webhooks" set "due_at" = \?, "lease_token"|^update "webhook_dispatch" set "event_id" = CASE/.test(sql)) return "claim";
  if (/^select "id", "type", "occurred_at", "data", "traceparent" from "events" where \("events"\."id" > \?/.test(sql)) return "reads";
  if (/^update "webhooks" set "status" = CASE WHEN \(\? = 0 AND coalesce\("webhooks"\."failing_since"/.test(sql)) return "record";
  return undefined;
}

const STEPS: Step[] = ["claim", "reads", "send", "record"];
const OPERATIONS: Operation[] = ["delete", "pause", "retype", "rotate", "url"];

describe("management operations at every step of a round", () => {
  for (const operation of OPERATIONS) {
    it.each(STEPS)(`${operation} at the round's %s`, async (step) => {
      const { api, key } = rig.h;
      const [other, target, moved] = [`${rig.path}/other`, `${rig.path}/target`, `${rig.path}/moved`];
      const bystander = await subscribe(api, key, rig.receiver.url(other), ["category.created"]);
      const hook = await subscribe(api, key, rig.receiver.url(target), ["category.created"]);
      const first = [await createCategory(api, key), await createCategory(api, key)];
      const change: Record<Operation, () => Promise<number>> = {
        delete: async () => (await api.delete(`/webhooks/${hook.id}`, { key })).status,
        pause: async () => (await api.patch(`/webhooks/${hook.id}`, { enabled: false }, { key })).status,
        retype: async () => (await api.patch(`/webhooks/${hook.id}`, { events: ["category.created", "pet.created"] }, { key })).status,
        rotate: async () => (await api.post(`/webhooks/${hook.id}/secret/rotate`, {}, { key })).status,
        url: async () => (await api.patch(`/webhooks/${hook.id}`, { url: rig.receiver.url(moved) }, { key })).status,
      };
      let done = false;
      const land = async (at: Step) => {
        if (done || at !== step) return;
        done = true;
        expect(await change[operation]()).toBeLessThan(300);
      };
      const { db } = rig.h.target;
      const racing: Database = {
        execute: async (statement) => {
          const at = typeof statement === "string" ? undefined : stepOf(statement.sql);
          if (at) await land(at);
          return db.execute(statement);
        },
        batch: async (statements, mode) => {
          for (const s of statements) if (typeof s !== "string" && stepOf(s.sql)) await land(stepOf(s.sql)!);
          return db.batch(statements, mode);
        },
      };
      const sending = async (input: string, init: RequestInit) => {
        if (input.includes("/target")) await land("send");
        return fetch(input, init);
      };
      await dispatchDue(racing, { config: rig.h.config, now: rig.h.clock, fetch: sending });
      expect(done).toBe(true);
      if (operation === "pause") expect((await api.patch(`/webhooks/${hook.id}`, { enabled: true }, { key })).status).toBe(200);
      const later = await createCategory(api, key);
      await rig.h.dispatch();
      await rig.h.dispatch();
      const ids = [...first, later].map((c) => c.id);
      expect(rig.receiver.at(other).map((r) => verified(r, bystander.secret).data.id)).toEqual(ids);
      const toTarget = [...rig.receiver.at(target), ...rig.receiver.at(moved)].map((r) => Number(r.headers["webhook-id"]!.slice(4)));
      // Each event at most once; every one of them unless the subscription was deleted.
      expect(new Set(toTarget).size).toBe(toTarget.length);
      if (operation !== "delete") expect([...toTarget].sort((a, b) => a - b)).toEqual(ids);
      expect((await rig.h.deliveries(bystander.id)).map((d) => [d.eventId, d.status])).toEqual(ids.map((id) => [id, "delivered"]));
    });
  }
});
