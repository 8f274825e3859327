/**
 * The API under real concurrent load (issue 11), shared by both runtimes: the
 * Node server as a child process over a libSQL file (test/properties/load.test.ts)
 * and the Worker under workerd over sqld (test/worker/load.test.ts).
 *
 * Each burst sends 200 requests at once, mixed: anonymous and
 * authenticated reads, 60 orders of 1 unit of one pet with stock 30, 20
 * `PUT /store/inventory/{petId}` and 20 `PATCH /pets/{petId}` racing with the
 * same `If-Match`, and double cancellations of 10 open orders. Then it checks
 * outcomes, never timings: no 5xx and every status one the contract allows,
 * exactly 30 orders accepted, exactly one winner per If-Match race, the rules
 * of docs/api.md#stock-and-ordering in the database rows (quantity never negative, pet status
 * consistent with quantity and open orders), exactly one event per successful
 * change and none for refused ones (the `events` table, docs/api.md#events-and-webhooks), and
 * `GET /health` 200 afterwards.
 */
import type { Database } from "../../src/db/client";
import { beforeAll, describe, expect, it } from "vitest";
import type { Target } from "../support/target";

/** A target under load, plus a libSQL client on the same database for row checks. */
export interface LoadTarget extends Target {
  sql: Database;
}

interface Reply {
  label: string;
  status: number;
  body: any;
  etag: string | null;
}

/** Stock of the pet everyone orders. */
const STOCK = 30;
/** Orders of 1 unit of that pet per burst. */
const ORDERS = 60;
const CUSTOMERS = 10;
const RACERS = 20;
/** Open orders cancelled twice each, concurrently. */
const CANCELLED = 10;

/** Requests of one burst, all sent at once. */
const BURST = 200;

/**
 * Register the load scenarios against the target `getTarget()` returns.
 * `connections` is how many of a burst's requests the target's client keeps in
 * flight at once (its connection limit; default: all {@link BURST}); only the
 * test names read it — the target's `fetch` enforces it.
 */
export function loadScenarios(getTarget: () => LoadTarget, options: { connections?: number } = {}): void {
  const connections = options.connections ?? BURST;
  const atOnce = connections >= BURST ? `${BURST} concurrent mixed requests` : `${BURST} mixed requests sent at once, ${connections} in flight`;
  describe("under concurrent load", () => {
    let target: LoadTarget;
    let staff: string;
    let customers: string[];
    let categoryId: number;

    /** One request; the body parsed when it is JSON, else the text (so non-JSON errors show up in failures). */
    async function send(
      label: string,
      method: string,
      path: string,
      options: { key?: string; body?: unknown; headers?: Record<string, string> } = {},
    ): Promise<Reply> {
      const headers: Record<string, string> = { ...(options.headers ?? {}) };
      if (options.key) headers.Authorization = `Bearer ${options.key}`;
      if (options.body !== undefined) headers["Content-Type"] = "application/json";
      try {
        const res = await target.fetch(path, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) });
        const text = await res.text();
        let body: unknown = text;
        try {
          body = text ? JSON.parse(text) : null;
        } catch {
          // not JSON: kept as text
        }
        return { label, status: res.status, body, etag: res.headers.get("ETag") };
      } catch (error) {
        // A connection the server dropped counts as a failure like a 5xx.
        return { label, status: 599, body: String(error), etag: null };
      }
    }

    async function ok(method: string, path: string, status: number, options: Parameters<typeof send>[3] = {}): Promise<Reply> {
      const reply = await send("setup", method, path, options);
      expect(reply.status, `${method} ${path}: ${JSON.stringify(reply.body)}`).toBe(status);
      return reply;
    }

    async function newPet(stock: number): Promise<number> {
      const pet = await ok("POST", "/pets", 201, { key: staff, body: { name: `Load ${Date.now()} ${Math.random()}`, categoryId } });
      if (stock !== 1) await ok("PUT", `/store/inventory/${pet.body.id}`, 200, { key: staff, body: { quantity: stock } });
      return pet.body.id as number;
    }

    /** The last event id so far: events of a burst are those after it. */
    async function lastEventId(): Promise<number> {
      const rs = await target.sql.execute("SELECT coalesce(max(id), 0) AS id FROM events");
      return Number(rs.rows[0]!.id);
    }

    /** Events after `after` that concern `petId`, counted by type. */
    async function eventsOf(petId: number, after: number): Promise<Record<string, number>> {
      const rs = await target.sql.execute({
        sql: `SELECT type, count(*) AS n FROM events
              WHERE id > ? AND (json_extract(data, '$.petId') = ? OR (type LIKE 'pet.%' AND json_extract(data, '$.id') = ?))
              GROUP BY type`,
        args: [after, petId, petId],
      });
      return Object.fromEntries(rs.rows.map((r) => [String(r.type), Number(r.n)]));
    }

    /** The pet's row with its stock and open orders, from the database. */
    async function rowsOf(petId: number) {
      const rs = await target.sql.execute({
        sql: `SELECT p.status, p.name, i.quantity,
                (SELECT count(*) FROM orders WHERE pet_id = p.id AND complete = 0) AS open_orders,
                (SELECT count(*) FROM orders WHERE pet_id = p.id) AS all_orders
              FROM pets p JOIN inventory i ON i.pet_id = p.id WHERE p.id = ?`,
        args: [petId],
      });
      const row = rs.rows[0]!;
      return {
        status: String(row.status),
        name: String(row.name),
        quantity: Number(row.quantity),
        openOrders: Number(row.open_orders),
        allOrders: Number(row.all_orders),
      };
    }

    beforeAll(async () => {
      target = getTarget();
      staff = target.staffKey;
      categoryId = (await ok("POST", "/categories", 201, { key: staff, body: { name: `Load ${Date.now()}` } })).body.id;
      customers = [];
      for (let i = 0; i < CUSTOMERS; i++) {
        const account = await ok("POST", "/accounts", 201, { body: { name: `Load customer ${i}`, email: `load${i}.${Date.now()}@example.com` } });
        customers.push(account.body.apiKey.key);
      }
    });

    it.each([1, 2])(
      `burst %i: ${atOnce} → no 5xx, ${STOCK} of ${ORDERS} orders, one winner per If-Match race, rules and events exact`,
      async () => {
        // The pets of this burst: ordered (stock 30), inventory race, PATCH race, cancellations.
        const ordered = await newPet(STOCK);
        const stocked = await newPet(5);
        const patched = await newPet(1);
        const held = await newPet(CANCELLED);
        const placed: { id: number; key: string }[] = [];
        for (let i = 0; i < CANCELLED; i++) {
          const key = customers[i % CUSTOMERS]!;
          const order = await ok("POST", "/store/orders", 201, { key, body: { petId: held, quantity: 1 } });
          placed.push({ id: order.body.id, key });
        }
        expect(await rowsOf(held)).toMatchObject({ status: "pending", quantity: 0, openOrders: CANCELLED });
        const stockedTag = (await ok("GET", `/store/inventory/${stocked}`, 200)).etag!;
        const patchedTag = await petEtag(patched);
        const after = await lastEventId();

        const burst: Promise<Reply>[] = [];
        for (let i = 0; i < ORDERS; i++) {
          burst.push(send("order", "POST", "/store/orders", { key: customers[i % CUSTOMERS], body: { petId: ordered, quantity: 1 } }));
        }
        for (let i = 0; i < RACERS; i++) {
          // Quantities 0..4: a loser that leaked would leave a status that does not fit the quantity, or extra events.
          burst.push(send("inventory", "PUT", `/store/inventory/${stocked}`, { key: staff, body: { quantity: i % 5 }, headers: { "If-Match": stockedTag } }));
          burst.push(
            send("patch", "PATCH", `/pets/${patched}`, {
              key: staff,
              body: { name: `Racer ${i}`, status: i % 2 ? "pending" : "available" },
              headers: { "If-Match": patchedTag },
            }),
          );
        }
        for (const order of placed) {
          burst.push(send("cancel", "DELETE", `/store/orders/${order.id}`, { key: order.key }));
          burst.push(send("cancel", "DELETE", `/store/orders/${order.id}`, { key: staff }));
        }
        for (let i = 0; burst.length < BURST; i++) {
          const key = customers[i % CUSTOMERS]!;
          const reads: [string, string, string | undefined][] = [
            ["read", `/pets/${ordered}`, undefined],
            ["read", `/store/inventory?petId=${ordered}&petId=${stocked}`, undefined],
            ["read", `/pets?status=available&limit=20`, undefined],
            ["read", `/categories/${categoryId}`, undefined],
            ["read", `/store/orders?petId=${ordered}`, key],
            ["read", `/pets?id=${patched}`, key],
            ["read", `/accounts/me`, key],
            ["read", `/events?after=${after}&limit=10`, staff],
          ];
          const [label, path, readKey] = reads[i % reads.length]!;
          burst.push(send(label, "GET", path, { key: readKey }));
        }
        expect(burst).toHaveLength(BURST);
        const replies = await Promise.all(burst);

        // No 5xx (nor dropped connections), and every status one the contract allows for that request.
        const allowed: Record<string, number[]> = { order: [201, 409], inventory: [200, 412], patch: [200, 412], cancel: [204, 404], read: [200] };
        const unexpected = replies
          .filter((r) => !allowed[r.label]!.includes(r.status))
          .map((r) => `${r.label} ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
        expect(unexpected).toEqual([]);
        for (const r of replies.filter((r) => r.status >= 400)) expect(r.body).toMatchObject({ status: r.status, code: expect.any(String) });

        // Orders: exactly the stock, the rest refused; the pet is pending at 0 (docs/api.md#stock-and-ordering).
        const orders = replies.filter((r) => r.label === "order");
        expect(orders.filter((r) => r.status === 201)).toHaveLength(STOCK);
        for (const r of orders.filter((r) => r.status === 409)) expect(["insufficient_stock", "pet_not_available"]).toContain(r.body.code);
        expect(await rowsOf(ordered)).toMatchObject({ status: "pending", quantity: 0, openOrders: STOCK, allOrders: STOCK });
        expect(await eventsOf(ordered, after)).toEqual({ "order.placed": STOCK, "inventory.updated": STOCK, "pet.updated": 1 });

        // Inventory race: one winner; the database holds exactly its write and its events.
        const puts = replies.filter((r) => r.label === "inventory");
        const putWinners = puts.filter((r) => r.status === 200);
        expect(putWinners).toHaveLength(1);
        for (const r of puts.filter((r) => r.status === 412)) expect(r.body.code).toBe("precondition_failed");
        const won = putWinners[0]!.body as { quantity: number; status: string };
        expect(won.status).toBe(won.quantity > 0 ? "available" : "sold");
        expect(await rowsOf(stocked)).toMatchObject({ quantity: won.quantity, status: won.status, openOrders: 0 });
        expect(await eventsOf(stocked, after)).toEqual(won.status === "available" ? { "inventory.updated": 1 } : { "inventory.updated": 1, "pet.updated": 1 });

        // PATCH race: one winner, one event, its name and status stored.
        const patches = replies.filter((r) => r.label === "patch");
        const patchWinners = patches.filter((r) => r.status === 200);
        expect(patchWinners).toHaveLength(1);
        for (const r of patches.filter((r) => r.status === 412)) expect(r.body.code).toBe("precondition_failed");
        const patchedNow = patchWinners[0]!.body as { name: string; status: string };
        expect(await rowsOf(patched)).toMatchObject({ name: patchedNow.name, status: patchedNow.status, quantity: 1 });
        expect(await eventsOf(patched, after)).toEqual({ "pet.updated": 1 });

        // Cancellations: each order cancelled once (the other attempt finds it gone), stock back, pet available.
        const cancels = replies.filter((r) => r.label === "cancel");
        expect(cancels.filter((r) => r.status === 204)).toHaveLength(CANCELLED);
        expect(await rowsOf(held)).toMatchObject({ status: "available", quantity: CANCELLED, openOrders: 0, allOrders: 0 });
        expect(await eventsOf(held, after)).toEqual({ "order.cancelled": CANCELLED, "inventory.updated": CANCELLED, "pet.updated": 1 });

        // docs/api.md#stock-and-ordering over every pet of this suite: stock never negative; status fits quantity and open orders.
        const broken = await target.sql.execute({
          sql: `SELECT p.id, p.status, i.quantity, (SELECT count(*) FROM orders o WHERE o.pet_id = p.id AND o.complete = 0) AS open_orders
              FROM pets p JOIN inventory i ON i.pet_id = p.id
              WHERE p.category_id = ? AND (i.quantity < 0
                 OR (p.status = 'sold' AND (i.quantity <> 0 OR EXISTS (SELECT 1 FROM orders o WHERE o.pet_id = p.id AND o.complete = 0)))
                 OR (p.status = 'available' AND i.quantity = 0))`,
          args: [categoryId],
        });
        expect(broken.rows).toEqual([]);

        // Still serving, database included.
        expect((await send("health", "GET", "/health")).status).toBe(200);
      },
      50_000,
    );

    /** The ETag of GET /pets/{petId} (public read). */
    async function petEtag(petId: number): Promise<string> {
      return (await ok("GET", `/pets/${petId}`, 200)).etag!;
    }
  });
}
