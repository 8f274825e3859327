/**
 * End-to-end scenarios of changing pets (docs/api.md: #endpoints,
 * #conditional-requests, #errors): PUT replaces, PATCH changes only the given
 * fields, DELETE removes the pet and its inventory entry, and If-Match makes
 * each of them refuse a stale ETag (412, nothing changes). Written against the
 * Target interface so the Node and Worker suites share them.
 */
import { describe, expect, it } from "vitest";
import { uniqueName } from "../support/client";
import type { Target } from "../support/target";
import { api, key, category, missingCategoryId, openPets } from "../support/cast";
import { createCategory, expectValidationError } from "./categories.scenarios";
import { createPet } from "./pets.scenarios";

/** Register the PUT, PATCH and DELETE /pets/{petId} scenarios against the target `getTarget()` returns. */
export function petChangesScenarios(getTarget: () => Target): void {
  describe("pets", () => {
    openPets(getTarget);

    describe("PUT /pets/{petId}", () => {
      it("replaces name, category and status; a missing status means available", async () => {
        const other = await createCategory(api, key);
        const pet = await createPet(api, key, category.id, { status: "pending" });
        const name = uniqueName("Replaced");
        const res = await api.put(`/pets/${pet.id}`, { name: ` ${name} `, categoryId: other.id }, { key });
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ id: pet.id, name, categoryId: other.id, status: "available" });
        expect((await api.get(`/pets?id=${pet.id}`)).body).toEqual([res.body]);
      });

      it("needs the whole NewPet: 400 validation_error otherwise", async () => {
        const pet = await createPet(api, key, category.id);
        expectValidationError(await api.put(`/pets/${pet.id}`, { name: "Only a name" }, { key }), ["body.categoryId"]);
        expectValidationError(await api.put(`/pets/${pet.id}`, { ...pet }, { key }), ["body.id"]);
        expectValidationError(await api.put(`/pets/${pet.id}`, { name: "x", categoryId: category.id, status: "gone" }, { key }), ["body.status"]);
      });

      it("answers 404 for a missing pet and 422 category_not_found for a missing category", async () => {
        const pet = await createPet(api, key, category.id);
        const bad = await api.put(`/pets/${pet.id}`, { name: "x", categoryId: missingCategoryId }, { key });
        expect(bad.status).toBe(422);
        expect(bad.body.code).toBe("category_not_found");
        expect((await api.get(`/pets?id=${pet.id}`)).body).toEqual([pet]);
        await api.delete(`/pets/${pet.id}`, { key });
        const gone = await api.put(`/pets/${pet.id}`, { name: "x", categoryId: category.id }, { key });
        expect(gone.status).toBe(404);
        expect(gone.body.code).toBe("not_found");
      });

      it("cannot silently make a sold pet available: PUT without status is 409 invalid_transition", async () => {
        const pet = await createPet(api, key, category.id, { status: "sold" });
        const res = await api.put(`/pets/${pet.id}`, { name: pet.name, categoryId: category.id }, { key });
        expect(res.status).toBe(409);
        expect(res.body.code).toBe("invalid_transition");
        const kept = await api.put(`/pets/${pet.id}`, { name: "Still sold", categoryId: category.id, status: "sold" }, { key });
        expect(kept.status).toBe(200);
        expect(kept.body.status).toBe("sold");
      });
    });

    describe("PATCH /pets/{petId}", () => {
      it("changes only the given fields", async () => {
        const other = await createCategory(api, key);
        const pet = await createPet(api, key, category.id, { status: "pending" });
        const renamed = await api.patch(`/pets/${pet.id}`, { name: "  Renamed 🐾 " }, { key });
        expect(renamed.status).toBe(200);
        expect(renamed.body).toEqual({ ...pet, name: "Renamed 🐾" });
        const moved = await api.patch(`/pets/${pet.id}`, { categoryId: other.id }, { key });
        expect(moved.body).toEqual({ ...pet, name: "Renamed 🐾", categoryId: other.id });
      });

      it.each([
        ["an empty body", {}, ["body"]],
        ["an unknown field", { colour: "red" }, ["body.colour"]],
        ["the read-only id", { id: 3, name: "x" }, ["body.id"]],
        ["a wrong type", { categoryId: "2" }, ["body.categoryId"]],
        ["an unknown status", { status: "adopted" }, ["body.status"]],
      ])("rejects %s: 400 validation_error", async (_label, body, paths) => {
        const pet = await createPet(api, key, category.id);
        expectValidationError(await api.patch(`/pets/${pet.id}`, body, { key }), paths);
      });

      it("answers 404 for a missing pet and 422 category_not_found for a missing category", async () => {
        const pet = await createPet(api, key, category.id);
        const bad = await api.patch(`/pets/${pet.id}`, { categoryId: missingCategoryId }, { key });
        expect(bad.status).toBe(422);
        expect(bad.body.code).toBe("category_not_found");
        await api.delete(`/pets/${pet.id}`, { key });
        const gone = await api.patch(`/pets/${pet.id}`, { name: "x" }, { key });
        expect(gone.status).toBe(404);
        expect(gone.body.code).toBe("not_found");
      });
    });

    describe("If-Match on writes", () => {
      it("PATCH/PUT: stale ETag → 412 precondition_failed and nothing changes; current ETag or * → 200", async () => {
        const pet = await createPet(api, key, category.id);
        const first = (await api.get(`/pets/${pet.id}`)).headers.get("etag")!;
        const ok = await api.patch(`/pets/${pet.id}`, { name: "First" }, { key, headers: { "If-Match": first } });
        expect(ok.status).toBe(200);

        const stale = await api.patch(`/pets/${pet.id}`, { name: "Lost update" }, { key, headers: { "If-Match": first } });
        expect(stale.status).toBe(412);
        expect(stale.body.code).toBe("precondition_failed");
        const staleReplace = await api.put(`/pets/${pet.id}`, { name: "Lost", categoryId: category.id }, { key, headers: { "If-Match": first } });
        expect(staleReplace.status).toBe(412);
        expect((await api.get(`/pets?id=${pet.id}`)).body[0].name).toBe("First");

        const weak = await api.patch(`/pets/${pet.id}`, { name: "Weak" }, { key, headers: { "If-Match": `W/${first}` } });
        expect(weak.status).toBe(412); // strong comparison (RFC 9110 §13.1.1)

        const current = (await api.get(`/pets/${pet.id}`)).headers.get("etag")!;
        const replaced = await api.put(`/pets/${pet.id}`, { name: "Second", categoryId: category.id }, { key, headers: { "If-Match": current } });
        expect(replaced.status).toBe(200);
        expect((await api.patch(`/pets/${pet.id}`, { name: "Third" }, { key, headers: { "If-Match": "*" } })).status).toBe(200);
      });

      it("without the deprecated route: GET /pets?id=N's ETag is accepted by If-Match, and each PUT/PATCH answers with the new ETag", async () => {
        const pet = await createPet(api, key, category.id);
        const listed = await api.get(`/pets?id=${pet.id}`);
        const listEtag = listed.headers.get("etag")!;
        expect(listEtag).toMatch(/^"[0-9a-f]+"$/);
        const patched = await api.patch(`/pets/${pet.id}`, { name: "Via list ETag" }, { key, headers: { "If-Match": listEtag } });
        expect(patched.status, JSON.stringify(patched.body)).toBe(200);
        // The write's ETag is the ETag of the pet it returns; the next conditional write needs no GET.
        const next = patched.headers.get("etag")!;
        expect(next).toMatch(/^"[0-9a-f]+"$/);
        expect(next).toBe((await api.get(`/pets/${pet.id}`)).headers.get("etag"));
        const replaced = await api.put(`/pets/${pet.id}`, { name: "Chained", categoryId: category.id }, { key, headers: { "If-Match": next } });
        expect(replaced.status).toBe(200);
        expect(replaced.headers.get("etag")).not.toBe(next);
        // Both earlier tags are stale now: the list ETag too.
        expect((await api.patch(`/pets/${pet.id}`, { name: "Lost" }, { key, headers: { "If-Match": listEtag } })).status).toBe(412);
        expect((await api.patch(`/pets/${pet.id}`, { name: "Lost" }, { key, headers: { "If-Match": next } })).status).toBe(412);
        const fresh = (await api.get(`/pets?id=${pet.id}`)).headers.get("etag")!;
        expect((await api.delete(`/pets/${pet.id}`, { key, headers: { "If-Match": fresh } })).status).toBe(204);
      });

      it("DELETE: stale ETag → 412 and the pet stays; current ETag → 204", async () => {
        const pet = await createPet(api, key, category.id);
        const etag = (await api.get(`/pets/${pet.id}`)).headers.get("etag")!;
        await api.patch(`/pets/${pet.id}`, { status: "pending" }, { key });
        const stale = await api.delete(`/pets/${pet.id}`, { key, headers: { "If-Match": etag } });
        expect(stale.status).toBe(412);
        expect(stale.body.code).toBe("precondition_failed");
        expect((await api.get(`/pets?id=${pet.id}`)).body).toHaveLength(1);
        const current = (await api.get(`/pets/${pet.id}`)).headers.get("etag")!;
        expect((await api.delete(`/pets/${pet.id}`, { key, headers: { "If-Match": current } })).status).toBe(204);
      });
    });

    describe("DELETE /pets/{petId}", () => {
      it("deletes the pet and its inventory entry: 204, then 404 everywhere", async () => {
        const pet = await createPet(api, key, category.id);
        const res = await api.delete(`/pets/${pet.id}`, { key });
        expect(res.status).toBe(204);
        expect(res.body).toBeNull();
        expect((await api.get(`/pets/${pet.id}`)).status).toBe(404);
        expect((await api.get(`/pets?id=${pet.id}`)).body).toEqual([]);
        expect((await api.get(`/store/inventory/${pet.id}`)).status).toBe(404);
        const again = await api.delete(`/pets/${pet.id}`, { key });
        expect(again.status).toBe(404);
        expect(again.body.code).toBe("not_found");
      });
    });
  });
}
