/**
 * Every PATCH is a JSON Merge Patch (RFC 7396; docs/api.md#patch-is-a-json-merge-patch), on both runtimes: a member left out is
 * kept, a member given is set, `null` removes an optional member and is 400 naming a required one, an empty patch is 400, and
 * `application/merge-patch+json` is accepted beside `application/json` on PATCH only.
 */
import { describe, expect, it } from "vitest";
import { alice, api, openStore, staff, store } from "../support/cast";
import { uniqueName, type ApiResponse } from "../support/client";
import type { OrderBody } from "../support/store";
import type { Target } from "../support/target";
import { type CategoryBody, createCategory, expectValidationError } from "./categories.scenarios";

const MERGE_PATCH = { "Content-Type": "application/merge-patch+json" };

/** A 400 `validation_error` with one detail, at `path`, whose message names the member. */
function expectNamed(res: ApiResponse, path: string): void {
  expectValidationError(res, [path]);
  const details = res.body.details as { path: string; message: string }[];
  expect(details).toHaveLength(1);
  expect(details[0]!.message).toContain(path.split(".").at(-1));
}

export function mergePatchScenarios(getTarget: () => Target): void {
  describe("PATCH is a JSON Merge Patch on every resource", () => {
    openStore(getTarget);

    describe("categories", () => {
      it("null removes the description; a member left out is kept", async () => {
        const category = await createCategory(api, staff, { description: "to remove" });
        const res = await api.patch<CategoryBody>(`/categories/${category.id}`, { description: null }, { key: staff, headers: MERGE_PATCH });
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        expect(res.body).toEqual({ id: category.id, name: category.name });
        expect((await api.get(`/categories/${category.id}`)).body).toEqual(res.body);
      });

      it("null on the name is 400 naming it, and changes nothing", async () => {
        const category = await createCategory(api, staff, { description: "kept" });
        expectNamed(await api.patch(`/categories/${category.id}`, { name: null, description: "not applied" }, { key: staff }), "body.name");
        expect((await api.get(`/categories/${category.id}`)).body).toEqual(category);
      });

      it("an empty patch is 400", async () => {
        const category = await createCategory(api, staff);
        expectValidationError(await api.patch(`/categories/${category.id}`, {}, { key: staff, headers: MERGE_PATCH }), ["body"]);
      });
    });

    describe("pets", () => {
      it("accepts application/merge-patch+json and keeps what it leaves out", async () => {
        const pet = await store.pet();
        const name = uniqueName("Renamed");
        const res = await api.patch(`/pets/${pet.id}`, { name }, { key: staff, headers: MERGE_PATCH });
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        expect(res.body).toEqual({ ...pet, name });
      });

      it.each(["name", "categoryId", "status"])("null on the required %s is 400 naming it", async (member) => {
        const pet = await store.pet();
        expectNamed(await api.patch(`/pets/${pet.id}`, { [member]: null }, { key: staff, headers: MERGE_PATCH }), `body.${member}`);
        expect((await api.get(`/pets/${pet.id}`)).body).toEqual(pet);
      });
    });

    describe("orders", () => {
      /** An open order of one unit with a ship date. */
      async function scheduled(): Promise<OrderBody> {
        const pet = await store.stocked(5);
        return store.order(alice, pet.id, 1, { shipDate: "2030-01-02T03:04:05.000Z" });
      }

      it("null removes the ship date of an open order", async () => {
        const order = await scheduled();
        const res = await store.update(order.id, { shipDate: null }, { headers: MERGE_PATCH });
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        const { shipDate, ...rest } = order;
        expect(shipDate).toBeDefined();
        expect(res.body).toEqual(rest);
        expect((await api.get(`/store/orders/${order.id}`, { key: alice })).body).toEqual(rest);
      });

      it("a new ship date is set, and a patch without one keeps it", async () => {
        const order = await scheduled();
        const moved = await store.update(order.id, { shipDate: "2031-05-06T07:08:09Z" });
        expect(moved.body).toEqual({ ...order, shipDate: "2031-05-06T07:08:09.000Z" });
        const fulfilled = await store.fulfil(order.id);
        expect(fulfilled).toEqual({ ...order, shipDate: "2031-05-06T07:08:09.000Z", complete: true });
      });

      it("fulfilling with the ship date removed ships it now", async () => {
        const order = await scheduled();
        const res = await store.update(order.id, { complete: true, shipDate: null }, { headers: MERGE_PATCH });
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        expect(res.body).toEqual({ ...order, complete: true, shipDate: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) });
        expect(res.body.shipDate).not.toBe(order.shipDate);
      });

      it("null on complete is 400 naming it", async () => {
        const order = await scheduled();
        expectNamed(await store.update(order.id, { complete: null }), "body.complete");
      });
    });

    describe("webhook subscriptions", () => {
      it("null on a member is 400 naming it: every member is required", async () => {
        for (const member of ["url", "events", "enabled"]) {
          expectNamed(await api.patch("/webhooks/1", { [member]: null }, { key: staff, headers: MERGE_PATCH }), `body.${member}`);
        }
      });
    });

    it("application/merge-patch+json is refused on POST and PUT: 415", async () => {
      const post = await api.post("/categories", { name: uniqueName("Category") }, { key: staff, headers: MERGE_PATCH });
      expect(post.status).toBe(415);
      expect(post.body.code).toBe("unsupported_media_type");
      const pet = await store.pet();
      const put = await api.put(`/pets/${pet.id}`, { name: pet.name, categoryId: pet.categoryId }, { key: staff, headers: MERGE_PATCH });
      expect(put.status).toBe(415);
      expect(put.body.code).toBe("unsupported_media_type");
    });

    it("the document: every PATCH takes both media types, and null only on optional members", async () => {
      const document = (await api.get("/openapi.json")).body;
      const patches = Object.entries(document.paths as Record<string, { patch?: { requestBody: { content: Record<string, { schema: { $ref: string } }> } } }>)
        .filter(([, item]) => item.patch)
        .map(([path, item]) => [path, item.patch!.requestBody.content] as const);
      expect(patches.map(([path]) => path).sort()).toEqual(["/categories/{categoryId}", "/pets/{petId}", "/store/orders/{orderId}", "/webhooks/{webhookId}"]);
      const nullable: Record<string, string[]> = {};
      for (const [path, content] of patches) {
        expect(Object.keys(content).sort(), path).toEqual(["application/json", "application/merge-patch+json"]);
        const name = content["application/json"]!.schema.$ref.split("/").at(-1)!;
        const schema = document.components.schemas[name] as { description: string; properties: Record<string, { nullable?: boolean }> };
        expect(schema.description, name).toMatch(/^A JSON Merge Patch \(RFC 7396\)/);
        nullable[name] = Object.keys(schema.properties).filter((member) => schema.properties[member]!.nullable);
        for (const member of nullable[name]!) expect(schema.description, name).toContain(member);
      }
      expect(nullable).toEqual({ CategoryPatch: ["description"], PetPatch: [], OrderUpdate: ["shipDate"], WebhookChange: ["rateLimit"] });
    });
  });
}
