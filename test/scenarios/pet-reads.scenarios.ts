/**
 * End-to-end scenarios of reading pets (docs/api.md: #endpoints,
 * #lists-and-pagination, #versioning-and-deprecation, #caching): the
 * deprecated GET /pets/{petId} with its Deprecation, Sunset and successor
 * Link, and GET /pets with its filters, batch lookup by id, keyset pages,
 * query validation, ETag and public Cache-Control. Written against the Target
 * interface so the Node and Worker suites share them.
 */
import { describe, expect, it } from "vitest";
import { uniqueName } from "../support/client";
import type { Target } from "../support/target";
import { api, key, category, missingCategoryId, openPets } from "../support/cast";
import { createCategory, PUBLIC_CACHE_CONTROL, walkPages } from "./categories.scenarios";
import { createPet, type PetBody } from "./pets.scenarios";

/** Register the GET /pets and GET /pets/{petId} scenarios against the target `getTarget()` returns. */
export function petReadsScenarios(getTarget: () => Target): void {
  describe("pets", () => {
    openPets(getTarget);

    describe("GET /pets/{petId} (deprecated)", () => {
      it("returns the pet with Deprecation, Sunset, successor Link, ETag and public Cache-Control", async () => {
        const pet = await createPet(api, key, category.id);
        const res = await api.get(`/pets/${pet.id}`);
        expect(res.status).toBe(200);
        expect(res.body).toEqual(pet);
        expect(res.headers.get("deprecation")).toMatch(/^@\d+$/); // RFC 9745
        const sunset = res.headers.get("sunset")!; // RFC 8594: an IMF-fixdate
        expect(sunset).toMatch(/^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/);
        const documentSunset = (await api.get("/openapi.json")).body.paths["/pets/{petId}"].get["x-sunset"];
        expect(Date.parse(sunset)).toBe(Date.parse(documentSunset));
        expect(Number(res.headers.get("deprecation")!.slice(1)) * 1000).toBeLessThan(Date.parse(sunset));
        expect(res.headers.get("link")).toBe(`</pets?id=${pet.id}>; rel="successor-version"`);
        expect(res.headers.get("etag")).toMatch(/^"[^"]+"$/);
        expect(res.headers.get("cache-control")).toBe(PUBLIC_CACHE_CONTROL);

        const successor = await api.get(`/pets?id=${pet.id}`);
        expect(successor.body).toEqual([pet]);
      });

      it("answers If-None-Match with 304, still deprecated", async () => {
        const pet = await createPet(api, key, category.id);
        const etag = (await api.get(`/pets/${pet.id}`)).headers.get("etag")!;
        const res = await api.get(`/pets/${pet.id}`, { headers: { "If-None-Match": etag } });
        expect(res.status).toBe(304);
        expect(res.body).toBeNull();
        expect(res.headers.get("etag")).toBe(etag);
        expect(res.headers.get("deprecation")).toMatch(/^@\d+$/);
        expect(res.headers.get("sunset")).toBeTruthy();
        expect(res.headers.get("cache-control")).toBe(PUBLIC_CACHE_CONTROL);
      });

      it("answers 404 not_found, with the deprecation headers, for a pet that does not exist", async () => {
        const pet = await createPet(api, key, category.id);
        await api.delete(`/pets/${pet.id}`, { key });
        const res = await api.get(`/pets/${pet.id}`);
        expect(res.status).toBe(404);
        expect(res.body.code).toBe("not_found");
        expect(res.headers.get("deprecation")).toMatch(/^@\d+$/);
        expect(res.headers.get("sunset")).toBeTruthy();
      });
    });

    describe("GET /pets", () => {
      it("filters by categoryId and status; bare array ordered by id", async () => {
        const own = await createCategory(api, key);
        const a = await createPet(api, key, own.id);
        const b = await createPet(api, key, own.id, { status: "pending" });
        const c = await createPet(api, key, own.id, { status: "sold" });
        const d = await createPet(api, key, own.id);
        await createPet(api, key, category.id); // another category

        const all = await api.get(`/pets?categoryId=${own.id}`);
        expect(all.status).toBe(200);
        expect(all.body).toEqual([a, b, c, d]);
        expect((await api.get(`/pets?categoryId=${own.id}&status=available`)).body).toEqual([a, d]);
        expect((await api.get(`/pets?categoryId=${own.id}&status=pending`)).body).toEqual([b]);
        expect((await api.get(`/pets?status=sold&categoryId=${own.id}`)).body).toEqual([c]);
        const available = (await api.get("/pets?status=available&limit=100")).body as PetBody[];
        expect(available.every((p) => p.status === "available")).toBe(true);
      });

      it("looks pets up by repeatable id (batch lookup), ignoring unknown ids", async () => {
        const pets = [await createPet(api, key, category.id), await createPet(api, key, category.id), await createPet(api, key, category.id)];
        const res = await api.get(`/pets?id=${pets[2]!.id}&id=${pets[0]!.id}&id=${pets[1]!.id}&id=9007199254740991`);
        expect(res.body).toEqual(pets);
        expect((await api.get(`/pets?id=${pets[1]!.id}&status=sold`)).body).toEqual([]);
        expect((await api.get(`/pets?id=${pets[1]!.id}&categoryId=${missingCategoryId}`)).body).toEqual([]);
      });

      it("accepts 100 ids and rejects 101 with 400 validation_error", async () => {
        const pet = await createPet(api, key, category.id);
        const ids = Array.from({ length: 99 }, (_, i) => 9007199254740991 - i);
        const hundred = await api.get(`/pets?${[pet.id, ...ids].map((id) => `id=${id}`).join("&")}`);
        expect(hundred.status).toBe(200);
        expect(hundred.body).toEqual([pet]);
        const tooMany = await api.get(`/pets?${[pet.id, ...ids, 1].map((id) => `id=${id}`).join("&")}`);
        expect(tooMany.status).toBe(400);
        expect(tooMany.body.code).toBe("validation_error");
        expect(tooMany.body.details[0].path).toMatch(/^query\.id/);
      });

      it.each([
        ["id=abc", "query.id"],
        ["id=1&id=1.5", "query.id"],
        ["id=0", "query.id"],
        ["id=99999999999999999999", "query.id"],
        ["categoryId=-1", "query.categoryId"],
        ["categoryId=x", "query.categoryId"],
        ["status=lost", "query.status"],
        ["status=available&status=sold", "query.status"],
        ["limit=0", "query.limit"],
        ["limit=101", "query.limit"],
        ["limit=1&limit=2", "query.limit"],
        ["cursor=not-a-cursor", "query.cursor"],
        ["sort=name", "query.sort"],
      ])("rejects ?%s with 400 validation_error", async (query, path) => {
        const res = await api.get(`/pets?${query}`);
        expect(res.status).toBe(400);
        expect(res.body.code).toBe("validation_error");
        expect(res.body.details.map((d: { path: string }) => d.path).some((p: string) => p.startsWith(path))).toBe(true);
      });

      it("paginates with Link rel=next across pages, keeping the filters", async () => {
        const own = await createCategory(api, key);
        const pets: PetBody[] = [];
        for (let i = 0; i < 5; i++) pets.push(await createPet(api, key, own.id));
        const pages = await walkPages<PetBody>(api, `/pets?categoryId=${own.id}&limit=2`, 2);
        expect(pages.map((p) => p.length)).toEqual([2, 2, 1]);
        expect(pages.flat()).toEqual(pets);

        const first = await api.get(`/pets?categoryId=${own.id}&limit=2`);
        const next = new URL(/^<([^>]+)>/.exec(first.headers.get("link")!)![1]!, "http://x");
        expect(next.searchParams.get("categoryId")).toBe(String(own.id));
        // Exactly one page: no Link.
        const exact = await api.get(`/pets?categoryId=${own.id}&limit=5`);
        expect(exact.body).toHaveLength(5);
        expect(exact.headers.get("link")).toBeNull();
      });

      it("defaults to 20 per page", async () => {
        const own = await createCategory(api, key);
        for (let i = 0; i < 21; i++) await createPet(api, key, own.id);
        const res = await api.get(`/pets?categoryId=${own.id}`);
        expect(res.body).toHaveLength(20);
        expect(res.headers.get("link")).toMatch(/rel="next"/);
      });

      it("carries an ETag and public Cache-Control; If-None-Match → 304 until the data changes", async () => {
        const own = await createCategory(api, key);
        const pet = await createPet(api, key, own.id);
        const path = `/pets?categoryId=${own.id}`;
        const res = await api.get(path);
        expect(res.headers.get("cache-control")).toBe(PUBLIC_CACHE_CONTROL);
        const etag = res.headers.get("etag")!;
        expect(etag).toMatch(/^"[^"]+"$/);
        const cached = await api.get(path, { headers: { "If-None-Match": etag } });
        expect(cached.status).toBe(304);
        expect(cached.headers.get("etag")).toBe(etag);
        expect(cached.headers.get("cache-control")).toBe(PUBLIC_CACHE_CONTROL);
        await api.patch(`/pets/${pet.id}`, { name: uniqueName("Renamed") }, { key });
        const changed = await api.get(path, { headers: { "If-None-Match": etag } });
        expect(changed.status).toBe(200);
        expect(changed.headers.get("etag")).not.toBe(etag);
      });
    });
  });
}
