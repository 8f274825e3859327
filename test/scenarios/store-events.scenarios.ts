/**
 * End-to-end scenarios of the events that store writes emit
 * (docs/api.md#events-and-webhooks, #stock-and-ordering): setting stock,
 * placing, fulfilling and cancelling orders emit exactly their order,
 * inventory and pet events, each equal to the resource as read afterwards;
 * refused store writes and idempotent replays emit none. Written against the
 * Target interface so the Node and Worker suites share them; each test looks
 * only at events about the pets and orders it created.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { uniqueName, type ApiResponse } from "../support/client";
import { eventChecks } from "../support/event-log";
import type { Target } from "../support/target";
import { api, key, openStaff } from "../support/cast";
import { signUp } from "./accounts.scenarios";
import { createCategory, type CategoryBody } from "./categories.scenarios";
import { createPet } from "./pets.scenarios";

export function storeEventsScenarios(getTarget: () => Target): void {
  describe("events", () => {
    openStaff(getTarget);
    const { expectEvents, getPet, getInventory } = eventChecks(() => ({ api, key }));

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
