/**
 * End-to-end scenarios of the event log (docs/api.md#events-and-webhooks, issue 6): `GET /events`
 * reads every change in commit order, and every write emits exactly its events
 * — with `data` equal to the resource after the change — while a refused write
 * (400, 409, 412, 422) emits none. Written against the Target interface so the
 * Node and Worker suites share them.
 *
 * Robust to a shared database: each test marks the end of the log before it
 * writes and then looks only at the events about the resources it created
 * (by id, or by unique name for refused creations).
 *
 * The "store" block covers orders and inventory writes; its tests skip
 * themselves while the served document has no such operations.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { connect, uniqueName, type ApiClient, type ApiResponse } from "../support/client";
import type { Target } from "../support/target";
import { expectUnauthorized, PRIVATE_CACHE_CONTROL, signUp } from "./accounts.scenarios";
import { createCategory, expectValidationError, type CategoryBody } from "./categories.scenarios";
import { createPet, type PetBody } from "./pets.scenarios";

export interface EventBody {
  id: number;
  type: string;
  occurredAt: string;
  data: Record<string, unknown>;
}

/** Events after `after` up to the current end of the log (follows `Link: rel="next"`, 100 per page). */
export async function eventsAfter(api: ApiClient, key: string, after: number): Promise<EventBody[]> {
  const out: EventBody[] = [];
  let path: string | undefined = `/events?after=${after}&limit=100`;
  while (path) {
    const res: ApiResponse<EventBody[]> = await api.get<EventBody[]>(path, { key });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    out.push(...res.body);
    const link = res.headers.get("link");
    path = link ? /^<([^>]+)>; rel="next"$/.exec(link)![1] : undefined;
  }
  return out;
}

const lastSeen = new WeakMap<ApiClient, number>();

/** The id of the newest event right now (0 when the log is empty). */
export async function endOfLog(api: ApiClient, key: string): Promise<number> {
  const from = lastSeen.get(api) ?? 0;
  const events = await eventsAfter(api, key, from);
  const end = events.length ? events[events.length - 1]!.id : from;
  lastSeen.set(api, end);
  return end;
}

/** Resources a test owns: events about anything else are ignored. */
export interface Owned {
  pets?: number[];
  categories?: number[];
  orders?: number[];
  /** Names used in refused creations. */
  names?: string[];
}

/** Whether an event is about one of `owned`'s resources. */
export function isAbout(event: EventBody, owned: Owned): boolean {
  const d = event.data as { id?: number; petId?: number; name?: string };
  const byName = d.name !== undefined && (owned.names ?? []).includes(d.name);
  switch (event.type.split(".")[0]) {
    case "pet":
      return (owned.pets ?? []).includes(d.id!) || byName;
    case "category":
      return (owned.categories ?? []).includes(d.id!) || byName;
    case "inventory":
      return (owned.pets ?? []).includes(d.petId!);
    case "order":
      return (owned.orders ?? []).includes(d.id!) || (owned.pets ?? []).includes(d.petId!);
    default:
      return true;
  }
}

/** `[type, data]` pairs, sorted by type (the order of events within one batch is not part of the contract). */
function pairs(events: { type: string; data: unknown }[]): [string, unknown][] {
  return events.map((e) => [e.type, e.data] as [string, unknown]).sort((a, b) => a[0].localeCompare(b[0]));
}

export function eventsScenarios(getTarget: () => Target): void {
  describe("events", () => {
    let api: ApiClient;
    let key: string;

    beforeAll(async () => {
      api = await connect(getTarget());
      key = getTarget().staffKey;
    });

    /** Run `write`, then assert that the events about `owned()` since are exactly `expected()` (compared as sets). */
    async function expectEvents<T>(
      write: () => Promise<T>,
      owned: (result: T) => Owned,
      expected: (result: T) => Promise<{ type: string; data: unknown }[]> | { type: string; data: unknown }[],
    ): Promise<EventBody[]> {
      const mark = await endOfLog(api, key);
      const result = await write();
      const events = (await eventsAfter(api, key, mark)).filter((e) => isAbout(e, owned(result)));
      expect(pairs(events)).toEqual(pairs(await expected(result)));
      for (const event of events) {
        expect(event.id).toBeGreaterThan(mark);
        expect(new Date(event.occurredAt).toISOString()).toBe(event.occurredAt);
      }
      return events;
    }

    async function getPet(petId: number): Promise<PetBody> {
      const res = await api.get<PetBody[]>(`/pets?id=${petId}`);
      expect(res.status).toBe(200);
      return res.body[0]!;
    }

    async function getInventory(petId: number): Promise<unknown> {
      const res = await api.get(`/store/inventory/${petId}`);
      expect(res.status).toBe(200);
      return res.body;
    }

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

    describe("categories emit their events", () => {
      it("POST → category.created with the created category", async () => {
        const events = await expectEvents(
          () => createCategory(api, key, { description: "with a description" }),
          (c) => ({ categories: [c.id] }),
          (c) => [{ type: "category.created", data: c }],
        );
        expect(events).toHaveLength(1);
      });

      it("PATCH → category.updated with the category after the change (a removed description is absent)", async () => {
        const category = await createCategory(api, key, { description: "old" });
        await expectEvents(
          async () => {
            const res = await api.patch<CategoryBody>(`/categories/${category.id}`, { name: uniqueName("Renamed"), description: null }, { key });
            expect(res.status).toBe(200);
            expect(res.body.description).toBeUndefined();
            return res.body;
          },
          () => ({ categories: [category.id] }),
          (after) => [{ type: "category.updated", data: after }],
        );
      });

      it("DELETE → category.deleted with its last state", async () => {
        const category = await createCategory(api, key, { description: "to delete" });
        await expectEvents(
          async () => expect((await api.delete(`/categories/${category.id}`, { key })).status).toBe(204),
          () => ({ categories: [category.id] }),
          () => [{ type: "category.deleted", data: category }],
        );
      });
    });

    describe("pets emit their events", () => {
      let category: CategoryBody;
      beforeAll(async () => {
        category = await createCategory(api, key);
      });

      it("POST → pet.created with the created pet", async () => {
        await expectEvents(
          () => createPet(api, key, category.id),
          (p) => ({ pets: [p.id] }),
          (p) => [{ type: "pet.created", data: p }],
        );
      });

      it("PUT → pet.updated with the pet after the change", async () => {
        const pet = await createPet(api, key, category.id);
        await expectEvents(
          async () => {
            const res = await api.put<PetBody>(`/pets/${pet.id}`, { name: uniqueName("Replaced"), categoryId: category.id }, { key });
            expect(res.status).toBe(200);
            return res.body;
          },
          () => ({ pets: [pet.id] }),
          (after) => [{ type: "pet.updated", data: after }],
        );
      });

      it("PATCH available → pending (hold) → pet.updated only: the stock did not change", async () => {
        const pet = await createPet(api, key, category.id);
        await expectEvents(
          async () => (await api.patch<PetBody>(`/pets/${pet.id}`, { status: "pending" }, { key })).body,
          () => ({ pets: [pet.id] }),
          () => [{ type: "pet.updated", data: { ...pet, status: "pending" } }],
        );
        expect(await getPet(pet.id)).toEqual({ ...pet, status: "pending" });
      });

      it("PATCH → sold: pet.updated and inventory.updated (quantity 0), each as read afterwards", async () => {
        const pet = await createPet(api, key, category.id);
        await expectEvents(
          async () => {
            const res = await api.patch<PetBody>(`/pets/${pet.id}`, { status: "sold" }, { key });
            expect(res.status).toBe(200);
            return res.body;
          },
          () => ({ pets: [pet.id] }),
          async (after) => [
            { type: "pet.updated", data: after },
            { type: "inventory.updated", data: await getInventory(pet.id) },
          ],
        );
        expect(await getInventory(pet.id)).toEqual({ petId: pet.id, quantity: 0, status: "sold" });
      });

      it("DELETE → pet.deleted with its last state", async () => {
        const pet = await createPet(api, key, category.id, { status: "pending" });
        await expectEvents(
          async () => expect((await api.delete(`/pets/${pet.id}`, { key })).status).toBe(204),
          () => ({ pets: [pet.id] }),
          () => [{ type: "pet.deleted", data: pet }],
        );
      });
    });

    describe("refused writes emit nothing", () => {
      it("400 (invalid body), 409 duplicate_name, 409 category_in_use, 412 stale If-Match on categories", async () => {
        const category = await createCategory(api, key);
        await createPet(api, key, category.id);
        const name = uniqueName("Refused");
        await expectEvents(
          async () => {
            expect((await api.post("/categories", { name: "", description: 5 }, { key })).status).toBe(400);
            expect((await api.post("/categories", { name, extra: true }, { key })).status).toBe(400);
            expect((await api.post("/categories", { name: category.name.toUpperCase() }, { key })).status).toBe(409);
            expect((await api.patch(`/categories/${category.id}`, { description: "x" }, { key, headers: { "If-Match": '"stale"' } })).status).toBe(412);
            const inUse = await api.delete(`/categories/${category.id}`, { key });
            expect(inUse.status).toBe(409);
            expect(inUse.body.code).toBe("category_in_use");
          },
          () => ({ categories: [category.id], names: [name, category.name.toUpperCase()] }),
          () => [],
        );
      });

      it("422 category_not_found, 409 invalid_transition and 400 on pets", async () => {
        const category = await createCategory(api, key);
        const pet = await createPet(api, key, category.id, { status: "sold" });
        const name = uniqueName("Refused pet");
        const missing = await createCategory(api, key);
        expect((await api.delete(`/categories/${missing.id}`, { key })).status).toBe(204);
        await expectEvents(
          async () => {
            const res = await api.post("/pets", { name, categoryId: missing.id }, { key });
            expect(res.status).toBe(422);
            expect((await api.patch(`/pets/${pet.id}`, { status: "pending" }, { key })).body.code).toBe("invalid_transition");
            expect((await api.patch(`/pets/${pet.id}`, { status: "available" }, { key })).status).toBe(409);
            expect((await api.put(`/pets/${pet.id}`, { name: "", categoryId: category.id }, { key })).status).toBe(400);
            expect((await api.patch(`/pets/${pet.id}`, { name: "x" }, { key, headers: { "If-Match": '"stale"' } })).status).toBe(412);
          },
          () => ({ pets: [pet.id], names: [name] }),
          () => [],
        );
      });
    });

    // ---- Store: orders and inventory.
    describe("store writes emit their events", () => {
      let category: CategoryBody;
      let customerKey: string;

      beforeAll(async () => {
        category = await createCategory(api, key);
        customerKey = (await signUp(api)).apiKey.key;
      });

      async function placeOrder(petId: number, quantity: number, headers: Record<string, string> = {}): Promise<ApiResponse> {
        return api.post("/store/orders", { petId, quantity }, { key: customerKey, headers });
      }

      it("PUT /store/inventory/{petId} n > 0 → inventory.updated only (status unchanged)", async () => {
        const pet = await createPet(api, key, category.id);
        await expectEvents(
          async () => {
            const res = await api.put(`/store/inventory/${pet.id}`, { quantity: 5 }, { key });
            expect(res.status).toBe(200);
            return res.body;
          },
          () => ({ pets: [pet.id] }),
          (item) => [{ type: "inventory.updated", data: item }],
        );
      });

      it("PUT /store/inventory/{petId} 0 → inventory.updated and pet.updated (sold)", async () => {
        const pet = await createPet(api, key, category.id);
        await expectEvents(
          async () => (await api.put(`/store/inventory/${pet.id}`, { quantity: 0 }, { key })).body,
          () => ({ pets: [pet.id] }),
          async (item) => [
            { type: "inventory.updated", data: item },
            { type: "pet.updated", data: await getPet(pet.id) },
          ],
        );
        expect((await getPet(pet.id)).status).toBe("sold");
      });

      it("POST /store/orders → order.placed and inventory.updated; pet.updated when the last unit went (pending)", async () => {
        const pet = await createPet(api, key, category.id);
        expect((await api.put(`/store/inventory/${pet.id}`, { quantity: 3 }, { key })).status).toBe(200);
        await expectEvents(
          async () => {
            const res = await placeOrder(pet.id, 1);
            expect(res.status, JSON.stringify(res.body)).toBe(201);
            return res.body;
          },
          (order) => ({ orders: [order.id], pets: [pet.id] }),
          async (order) => [
            { type: "order.placed", data: order },
            { type: "inventory.updated", data: await getInventory(pet.id) },
          ],
        );
        await expectEvents(
          async () => (await placeOrder(pet.id, 2)).body,
          (order) => ({ orders: [order.id], pets: [pet.id] }),
          async (order) => [
            { type: "order.placed", data: order },
            { type: "inventory.updated", data: { petId: pet.id, quantity: 0, status: "pending" } },
            { type: "pet.updated", data: { ...pet, status: "pending" } },
          ],
        );
      });

      it("PATCH /store/orders/{orderId} complete → order.fulfilled (+ pet.updated sold when nothing is left)", async () => {
        const pet = await createPet(api, key, category.id);
        const order = (await placeOrder(pet.id, 1)).body;
        await expectEvents(
          async () => {
            const res = await api.patch(`/store/orders/${order.id}`, { complete: true }, { key });
            expect(res.status, JSON.stringify(res.body)).toBe(200);
            return res.body;
          },
          () => ({ orders: [order.id], pets: [pet.id] }),
          (after) => [
            { type: "order.fulfilled", data: after },
            { type: "pet.updated", data: { ...pet, status: "sold" } },
          ],
        );
      });

      it("DELETE /store/orders/{orderId} → order.cancelled, inventory.updated (+ pet.updated available)", async () => {
        const pet = await createPet(api, key, category.id);
        const order = (await placeOrder(pet.id, 1)).body;
        await expectEvents(
          async () => expect((await api.delete(`/store/orders/${order.id}`, { key: customerKey })).status).toBe(204),
          () => ({ orders: [order.id], pets: [pet.id] }),
          () => [
            { type: "order.cancelled", data: order },
            { type: "inventory.updated", data: { petId: pet.id, quantity: 1, status: "available" } },
            { type: "pet.updated", data: { ...pet, status: "available" } },
          ],
        );
      });

      it("refused store writes (409 insufficient_stock / pet_not_available / order_complete, 422, 400) and idempotent replays emit nothing", async () => {
        const pet = await createPet(api, key, category.id);
        const held = await createPet(api, key, category.id, { status: "pending" });
        const stocked = await createPet(api, key, category.id);
        const idem = { "Idempotency-Key": uniqueName("idem").replace(/\s/g, "-") };
        const first = await placeOrder(pet.id, 1, idem);
        expect(first.status).toBe(201);
        const fulfilled = await api.patch(`/store/orders/${first.body.id}`, { complete: true }, { key });
        expect(fulfilled.status).toBe(200);
        const missing = await createPet(api, key, category.id);
        expect((await api.delete(`/pets/${missing.id}`, { key })).status).toBe(204);
        await expectEvents(
          async () => {
            const replay = await placeOrder(pet.id, 1, idem);
            expect(replay.status).toBe(201);
            expect(replay.headers.get("idempotent-replayed")).toBe("true");
            expect((await placeOrder(stocked.id, 2)).body.code).toBe("insufficient_stock");
            expect((await placeOrder(held.id, 1)).body.code).toBe("pet_not_available");
            expect((await placeOrder(missing.id, 1)).status).toBe(422);
            expect((await placeOrder(pet.id, 0)).status).toBe(400);
            expect((await api.delete(`/store/orders/${first.body.id}`, { key })).body.code).toBe("order_complete");
            expect((await api.put(`/store/inventory/${pet.id}`, { quantity: -1 }, { key })).status).toBe(400);
          },
          () => ({ orders: [first.body.id], pets: [pet.id, held.id, stocked.id, missing.id] }),
          () => [],
        );
      });
    });
  });
}
