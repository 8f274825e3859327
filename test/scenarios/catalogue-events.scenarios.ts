/**
 * End-to-end scenarios of the events that catalogue writes emit
 * (docs/api.md#events-and-webhooks): every category and pet write emits
 * exactly its events, with `data` equal to the resource after the change (or
 * its last state when deleted), and a refused write (400, 409, 412, 422) emits
 * none. Written against the Target interface so the Node and Worker suites
 * share them; each test looks only at events about the resources it created
 * (by id, or by unique name for refused creations).
 */
import { beforeAll, describe, expect, it } from "vitest";
import { uniqueName } from "../support/client";
import { eventChecks } from "../support/event-log";
import type { Target } from "../support/target";
import { api, key, openStaff } from "../support/cast";
import { createCategory, type CategoryBody } from "./categories.scenarios";
import { createPet, type PetBody } from "./pets.scenarios";

export function catalogueEventsScenarios(getTarget: () => Target): void {
  describe("events", () => {
    openStaff(getTarget);
    const { expectEvents, getPet, getInventory } = eventChecks(() => ({ api, key }));

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
  });
}
