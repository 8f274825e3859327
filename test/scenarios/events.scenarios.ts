/**
 * End-to-end scenarios of the event log (docs/api.md#events-and-webhooks, issue 6): `GET /events`
 * reads every change in commit order, `after` a cursor, with `Link: rel="next"`
 * while more exist; staff only, private, parameters validated. What each write
 * emits is in catalogue-events.scenarios.ts and store-events.scenarios.ts.
 * Written against the Target interface so the Node and Worker suites share them.
 *
 * Robust to a shared database: each test marks the end of the log before it
 * writes and then looks only at the events about the resources it created.
 */
import { describe, expect, it } from "vitest";
import { endOfLog, eventsAfter, isAbout, type EventBody } from "../support/event-log";
import type { Target } from "../support/target";
import { api, key, openStaff } from "../support/cast";
import { expectUnauthorized, PRIVATE_CACHE_CONTROL, signUp } from "./accounts.scenarios";
import { createCategory, expectValidationError, type CategoryBody } from "./categories.scenarios";

export function eventsScenarios(getTarget: () => Target): void {
  describe("events", () => {
    openStaff(getTarget);

    describe("GET /events", () => {
      it("needs a staff key: 401 without a key, 403 with a customer key", async () => {
        expectUnauthorized(await api.get("/events"));
        const customer = await signUp(api);
        const res = await api.get("/events", { key: customer.apiKey.key });
        expect(res.status).toBe(403);
        expect(res.body.code).toBe("forbidden");
      });

      it('reads the log in commit order, `after` a cursor id, `Link: rel="next"` while more exist, private', async () => {
        const mark = await endOfLog(api, key);
        const created: CategoryBody[] = [];
        for (let i = 0; i < 3; i++) created.push(await createCategory(api, key));

        const first = await api.get<EventBody[]>(`/events?after=${mark}&limit=2`, { key });
        expect(first.status).toBe(200);
        expect(first.headers.get("cache-control")).toBe(PRIVATE_CACHE_CONTROL);
        expect(first.body).toHaveLength(2);
        const link = first.headers.get("link");
        expect(link).toBe(`</events?after=${first.body[1]!.id}&limit=2>; rel="next"`);

        const all = await eventsAfter(api, key, mark);
        const ids = all.map((e) => e.id);
        expect(ids).toEqual([...ids].sort((a, b) => a - b));
        expect(new Set(ids).size).toBe(ids.length);
        expect(all.slice(0, 2)).toEqual(first.body);
        const ours = all.filter((e) => isAbout(e, { categories: created.map((c) => c.id) }));
        expect(ours.map((e) => [e.type, e.data])).toEqual(created.map((c) => ["category.created", c]));

        // Past the end: an empty page without a next link.
        const end = all[all.length - 1]!.id;
        const past = await api.get<EventBody[]>(`/events?after=${end + 1000000}`, { key });
        expect(past.status).toBe(200);
        expect(past.body).toEqual([]);
        expect(past.headers.get("link")).toBeNull();
      });

      it("defaults to the start of the log and 20 events", async () => {
        for (let i = 0; i < 21; i++) await createCategory(api, key);
        const res = await api.get<EventBody[]>("/events", { key });
        expect(res.status).toBe(200);
        expect(res.body).toHaveLength(20);
        expect(res.body[0]!.id).toBe(Math.min(...res.body.map((e) => e.id)));
        expect(res.headers.get("link")).toBe(`</events?after=${res.body[19]!.id}>; rel="next"`);
      });

      it("rejects bad parameters with 400 validation_error", async () => {
        for (const [query, path] of [
          ["after=-1", "query.after"],
          ["after=abc", "query.after"],
          ["after=1.5", "query.after"],
          ["after=99999999999999999999", "query.after"],
          ["limit=0", "query.limit"],
          ["limit=101", "query.limit"],
          ["cursor=abc", "query.cursor"],
        ] as const) {
          expectValidationError(await api.get(`/events?${query}`, { key }), [path]);
        }
      });
    });
  });
}
