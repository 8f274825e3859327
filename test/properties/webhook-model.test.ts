/**
 * Webhooks against a model (docs/webhooks.md#design): seeded random interleavings of writes, pauses and resumes, re-typing
 * (several times), rotations, URL changes, deletes, resends, receiver failures and dispatch runs (sometimes two at once, as
 * two processes would) on three subscriptions. At the end, with every receiver healthy and every subscription resumed, each
 * event a surviving subscription wanted when it was committed is delivered or logged as given up; none is delivered twice
 * but for its resends; strict subscriptions got their first deliveries in commit order.
 */
import { describe, expect, it } from "vitest";
import { dispatchDue } from "../../src/services/webhooks/dispatch";
import { createCategory } from "../scenarios/categories.scenarios";
import { createPet } from "../scenarios/pets.scenarios";
import type { DeliveryBody } from "../scenarios/webhooks.scenarios";
import { CAP_MS, harness } from "../support/webhook-harness";
import { Receiver } from "../support/webhook-receiver";

const TYPES = ["category.created", "pet.created"] as const;
const SEEDS = [1, 2, 3, 4];
const STEPS = 100;

/** A small seeded PRNG (mulberry32): the same seed, the same interleaving. */
function prng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Modelled {
  id: number;
  base: string;
  version: number;
  types: string[];
  enabled: boolean;
  failing: boolean;
  ordering: "strict" | "none";
  /** Event id → how many resends were asked. */
  resent: Map<number, number>;
  /** The events it wanted when they were committed. */
  wanted: number[];
}

describe("webhooks against a model", () => {
  it.each(SEEDS)(
    "seed %i: every wanted event delivered or given up, once, in order where strict",
    async (seed) => {
      const random = prng(seed);
      const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]!;
      const h = await harness();
      const receiver = await Receiver.start();
      try {
        const { api, key } = h;
        const subs: Modelled[] = [];
        for (let i = 0; i < 3; i++) {
          const base = `/m${seed}/s${i}`;
          const ordering = i === 2 ? "none" : "strict";
          const types = [...TYPES];
          const res = await api.post<{ id: number }>("/webhooks", { url: receiver.url(`${base}/v0`), events: types, ordering, maxInFlight: 3 }, { key });
          expect(res.status).toBe(201);
          subs.push({ id: res.body.id, base, version: 0, types, enabled: true, failing: false, ordering, resent: new Map(), wanted: [] });
        }
        const category = await createCategory(api, key);
        let newest = 0;
        const commit = async (type: string) => {
          await (type === "pet.created" ? createPet(api, key, category.id) : createCategory(api, key));
          const events = (await api.get<{ id: number; type: string }[]>(`/events?after=${newest}&limit=100`, { key })).body;
          for (const e of events) {
            newest = e.id;
            for (const s of subs) if (s.types.includes(e.type)) s.wanted.push(e.id);
          }
        };
        // The category's own event.
        const first = (await api.get<{ id: number; type: string }[]>("/events?after=0&limit=100", { key })).body;
        for (const e of first) {
          newest = e.id;
          for (const s of subs) if (s.types.includes(e.type)) s.wanted.push(e.id);
        }
        const run = () => dispatchDue(h.target.db, { config: h.config, now: h.clock, fetch: (input, init) => fetch(input, init) });
        for (const s of subs) receiver.on(`${s.base}/v0`, () => 204);
        const behave = (s: Modelled) => receiver.on(`${s.base}/v${s.version}`, (n) => (s.failing && n % 5 !== 0 ? 503 : 204));

        for (let step = 0; step < STEPS; step++) {
          const live = subs.filter((s) => s.id > 0);
          const s = pick(live.length > 0 ? live : subs);
          const roll = random();
          if (roll < 0.35) await commit(pick(TYPES));
          else if (roll < 0.45 && s.id > 0) {
            s.enabled = !s.enabled;
            expect((await api.patch(`/webhooks/${s.id}`, { enabled: s.enabled }, { key })).status).toBe(200);
          } else if (roll < 0.55 && s.id > 0) {
            const types = TYPES.filter(() => random() < 0.6);
            s.types = types.length > 0 ? types : [pick(TYPES)];
            expect((await api.patch(`/webhooks/${s.id}`, { events: s.types }, { key })).status).toBe(200);
          } else if (roll < 0.6 && s.id > 0) {
            expect((await api.post(`/webhooks/${s.id}/secret/rotate`, {}, { key })).status).toBe(200);
          } else if (roll < 0.65 && s.id > 0) {
            s.version += 1;
            behave(s);
            expect((await api.patch(`/webhooks/${s.id}`, { url: receiver.url(`${s.base}/v${s.version}`) }, { key })).status).toBe(200);
          } else if (roll < 0.67 && s.id > 0 && live.length > 2) {
            expect((await api.delete(`/webhooks/${s.id}`, { key })).status).toBe(204);
            s.id = -s.id;
          } else if (roll < 0.72 && s.id > 0) {
            const log = (await api.get<DeliveryBody[]>(`/webhooks/${s.id}/deliveries?status=delivered&limit=100`, { key })).body;
            const done = log.filter((d) => d.eventId > 0);
            if (done.length > 0) {
              const e = pick(done).eventId;
              s.resent.set(e, (s.resent.get(e) ?? 0) + 1);
              expect((await api.post(`/webhooks/${s.id}/events/${e}/resend`, undefined, { key })).status).toBe(202);
            }
          } else if (roll < 0.8 && s.id > 0) {
            s.failing = !s.failing;
            behave(s);
          } else if (roll < 0.9) {
            await (random() < 0.3 ? Promise.all([run(), run()]) : run());
          } else h.advance(Math.floor(random() * CAP_MS));
        }

        // Quiesce: every receiver healthy, every subscription resumed, retries due, until nothing is attempted.
        for (const s of subs.filter((x) => x.id > 0)) {
          s.failing = false;
          behave(s);
          if (!s.enabled) expect((await api.patch(`/webhooks/${s.id}`, { enabled: true }, { key })).status).toBe(200);
        }
        for (let i = 0; i < 30; i++) {
          h.advance(CAP_MS * 2);
          if ((await run()).attempted === 0 && i > 2) break;
        }

        for (const s of subs.filter((x) => x.id > 0)) {
          const received = receiver.received.filter((r) => r.path.startsWith(`${s.base}/`) && r.status < 300);
          const ids = received.map((r) => Number(r.headers["webhook-id"]!.replace(/^evt_/, ""))).filter((id) => !Number.isNaN(id) && id > 0);
          const log = (await api.get<DeliveryBody[]>(`/webhooks/${s.id}/deliveries?limit=100`, { key })).body;
          const givenUp = new Set(log.filter((d) => d.status === "failed").map((d) => d.eventId));
          for (const e of s.wanted) {
            const times = ids.filter((id) => id === e).length;
            expect(times > 0 || givenUp.has(e), `subscription ${s.id} (seed ${seed}): event ${e} neither delivered nor given up`).toBe(true);
            expect(times, `subscription ${s.id} (seed ${seed}): event ${e} delivered ${times} times`).toBeLessThanOrEqual(1 + (s.resent.get(e) ?? 0));
          }
          expect(
            ids.filter((id) => !s.wanted.includes(id)),
            `subscription ${s.id}: events it did not want`,
          ).toEqual([]);
          if (s.ordering === "strict") {
            const firsts = ids.filter((id, index) => ids.indexOf(id) === index && !s.resent.has(id));
            expect(firsts, `subscription ${s.id} (seed ${seed}): order`).toEqual([...firsts].sort((a, b) => a - b));
          }
        }
      } finally {
        await receiver.close();
        await h.target.close();
      }
    },
    120_000,
  );
});
