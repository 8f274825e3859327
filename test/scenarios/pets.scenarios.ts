/**
 * End-to-end scenarios of /pets (docs/api.md: #resources, #endpoints,
 * #stock-and-ordering, #conditional-requests, #errors,
 * #versioning-and-deprecation, #caching), written against the Target interface so the
 * Node and Worker suites share them.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { connect, uniqueName, type ApiClient } from "../support/client";
import type { Target } from "../support/target";
import { createCategory, expectValidationError, PUBLIC_CACHE_CONTROL, walkPages, type CategoryBody } from "./categories.scenarios";

export type PetStatus = "available" | "pending" | "sold";

export interface PetBody {
  id: number;
  name: string;
  categoryId: number;
  status: PetStatus;
}

/** Create a pet (asserting 201) and return it. */
export async function createPet(api: ApiClient, key: string, categoryId: number, body: { name?: string; status?: PetStatus } = {}): Promise<PetBody> {
  const res = await api.post<PetBody>("/pets", { name: uniqueName("Pet"), categoryId, ...body }, { key });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

/** Names from the corpora and beyond that must come back exactly as sent. */
export const TRICKY_NAMES = [
  "Cão da Serra de Aires",
  "English Toy Terrier (Black &amp; Tan)",
  "Međimurje Horse",
  "Anglo-Français de Petite Vénerie",
  "Zoë 🐶🦴",
  "👩‍👩‍👧 family dog",
  "<script>alert(1)</script> & \"quotes\" 'single'",
  "日本犬 柴",
  "back\\slash / slash",
];

/** Index of `needle` in `haystack` (bytes), or -1. */
function indexOfBytes(haystack: Uint8Array, needle: Uint8Array): number {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

/** Register the /pets scenarios against the target `getTarget()` returns (called once per test file). */
export function petsScenarios(getTarget: () => Target): void {
  describe("pets", () => {
    let api: ApiClient;
    let key: string;
    let category: CategoryBody;
    /** A category id that no longer exists. */
    let missingCategoryId: number;

    beforeAll(async () => {
      api = await connect(getTarget());
      key = getTarget().staffKey;
      category = await createCategory(api, key);
      const gone = await createCategory(api, key);
      await api.delete(`/categories/${gone.id}`, { key });
      missingCategoryId = gone.id;
    });

    describe("POST /pets", () => {
      it("creates a pet: 201, Location, status defaults to available, inventory quantity 1", async () => {
        const name = uniqueName("Bella");
        const res = await api.post("/pets", { name, categoryId: category.id }, { key });
        expect(res.status).toBe(201);
        expect(res.body).toEqual({ id: expect.any(Number), name, categoryId: category.id, status: "available" });
        expect(res.headers.get("location")).toBe(`/pets/${res.body.id}`);
        expect((await api.get(res.headers.get("location")!)).body).toEqual(res.body);
        const inventory = await api.get(`/store/inventory/${res.body.id}`);
        expect(inventory.body).toEqual({ petId: res.body.id, quantity: 1, status: "available" });
      });

      it.each([
        ["available", 1],
        ["pending", 1],
        ["sold", 0],
      ] as const)("creates a %s pet with inventory quantity %i", async (status, quantity) => {
        const pet = await createPet(api, key, category.id, { status });
        expect(pet.status).toBe(status);
        expect((await api.get(`/store/inventory/${pet.id}`)).body).toEqual({ petId: pet.id, quantity, status });
      });

      it.each(TRICKY_NAMES)("stores %j byte for byte (read, list, replace)", async (name) => {
        const created = await api.post("/pets", { name, categoryId: category.id }, { key });
        expect(created.status).toBe(201);
        expect(created.body.name).toBe(name);
        const id = created.body.id as number;
        expect((await api.get(`/pets/${id}`)).body.name).toBe(name);
        expect((await api.get(`/pets?id=${id}`)).body).toEqual([created.body]);
        const replaced = await api.put(`/pets/${id}`, { name, categoryId: category.id }, { key });
        expect(replaced.body.name).toBe(name);
        // The raw body carries the UTF-8 bytes themselves: no HTML escaping, no \u escapes.
        if (!/["\\]/.test(name)) {
          const raw = new Uint8Array(await (await getTarget().fetch(`/pets?id=${id}`)).arrayBuffer());
          expect(indexOfBytes(raw, new TextEncoder().encode(name))).toBeGreaterThan(0);
        }
      });

      it("trims the name; accepts 100 characters", async () => {
        const name = uniqueName("Trim");
        expect((await api.post("/pets", { name: `\n  ${name}  `, categoryId: category.id }, { key })).body.name).toBe(name);
        const long = uniqueName("L").padEnd(100, "y");
        expect((await api.post("/pets", { name: long, categoryId: category.id }, { key })).body.name).toBe(long);
      });

      it("refers to an existing category: 422 category_not_found otherwise, and nothing is created", async () => {
        const name = uniqueName("Orphan");
        const res = await api.post("/pets", { name, categoryId: missingCategoryId }, { key });
        expect(res.status).toBe(422);
        expect(res.body.code).toBe("category_not_found");
        const tooBig = await api.post("/pets", { name, categoryId: 9007199254740991 }, { key });
        expect(tooBig.status).toBe(422);
        expect(tooBig.body.code).toBe("category_not_found");
      });

      it.each([
        ["missing fields", {}, ["body.name", "body.categoryId"]],
        ["an empty name", { name: "", categoryId: 1 }, ["body.name"]],
        ["a whitespace name", { name: " \t ", categoryId: 1 }, ["body.name"]],
        ["a 101-character name", { name: "n".repeat(101), categoryId: 1 }, ["body.name"]],
        ["a numeric name", { name: 5, categoryId: 1 }, ["body.name"]],
        ["a string categoryId", { name: "Rex", categoryId: "1" }, ["body.categoryId"]],
        ["a fractional categoryId", { name: "Rex", categoryId: 1.5 }, ["body.categoryId"]],
        ["a zero categoryId", { name: "Rex", categoryId: 0 }, ["body.categoryId"]],
        ["a negative categoryId", { name: "Rex", categoryId: -1 }, ["body.categoryId"]],
        ["a categoryId beyond 2^53-1", { name: "Rex", categoryId: 9007199254740992 }, ["body.categoryId"]],
        ["an unknown status", { name: "Rex", categoryId: 1, status: "lost" }, ["body.status"]],
        ["a null status", { name: "Rex", categoryId: 1, status: null }, ["body.status"]],
        ["an unknown field", { name: "Rex", categoryId: 1, colour: "brown" }, ["body.colour"]],
        ["the read-only id", { id: 12, name: "Rex", categoryId: 1 }, ["body.id"]],
        ["several problems at once", { id: 1, name: 1, categoryId: "x", tags: [] }, ["body.id", "body.name", "body.categoryId", "body.tags"]],
      ])("rejects %s: 400 validation_error naming each path", async (_label, body, paths) => {
        expectValidationError(await api.post("/pets", body, { key }), paths);
      });
    });

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

    describe("status transitions by PUT/PATCH (docs/api.md#stock-and-ordering, last row)", () => {
      type Row = [from: PetStatus, to: PetStatus, expected: 200 | 409, quantityAfter: number];
      // Pets created here have quantity 1 unless sold (0) and no orders.
      const rows: Row[] = [
        ["available", "pending", 200, 1], // hold
        ["pending", "available", 200, 1], // release a hold: quantity > 0
        ["available", "sold", 200, 0], // no open order: sets quantity 0
        ["pending", "sold", 200, 0],
        ["sold", "available", 409, 0], // quantity 0: restock first
        ["sold", "pending", 409, 0], // never allowed
        ["available", "available", 200, 1], // no change
        ["pending", "pending", 200, 1],
        ["sold", "sold", 200, 0],
      ];
      for (const via of ["PATCH", "PUT"] as const) {
        it.each(rows)(`${via} %s → %s answers %i`, async (from, to, expected, quantityAfter) => {
          const pet = await createPet(api, key, category.id, { status: from });
          const body = via === "PATCH" ? { status: to } : { name: pet.name, categoryId: pet.categoryId, status: to };
          const res = await api.request(via, `/pets/${pet.id}`, body, { key });
          expect(res.status, JSON.stringify(res.body)).toBe(expected);
          if (expected === 200) {
            expect(res.body).toEqual({ ...pet, status: to });
          } else {
            expect(res.body.code).toBe("invalid_transition");
          }
          const status = expected === 200 ? to : from;
          expect((await api.get(`/pets?id=${pet.id}`)).body).toEqual([{ ...pet, status }]);
          expect((await api.get(`/store/inventory/${pet.id}`)).body).toEqual({ petId: pet.id, quantity: quantityAfter, status });
        });
      }
    });

    describe("status transitions that depend on stock and orders (docs/api.md#stock-and-ordering)", () => {
      /** A pet with `stock` units and one open order of 1 unit. */
      async function petWithOpenOrder(stock: number): Promise<{ pet: PetBody; orderId: number }> {
        const pet = await createPet(api, key, category.id);
        if (stock !== 1) expect((await api.put(`/store/inventory/${pet.id}`, { quantity: stock }, { key })).status).toBe(200);
        const order = await api.post("/store/orders", { petId: pet.id, quantity: 1 }, { key });
        expect(order.status, JSON.stringify(order.body)).toBe(201);
        return { pet, orderId: order.body.id };
      }

      it("available → sold is refused while an order is open (409 invalid_transition), nothing changes", async () => {
        const { pet } = await petWithOpenOrder(5);
        for (const via of ["PATCH", "PUT"]) {
          const body = via === "PATCH" ? { status: "sold" } : { name: pet.name, categoryId: pet.categoryId, status: "sold" };
          const res = await api.request(via, `/pets/${pet.id}`, body, { key });
          expect(res.status).toBe(409);
          expect(res.body.code).toBe("invalid_transition");
        }
        expect((await api.get(`/store/inventory/${pet.id}`)).body).toEqual({ petId: pet.id, quantity: 4, status: "available" });
      });

      it("pending → sold is refused while an order is open; pending → available needs quantity > 0", async () => {
        const { pet } = await petWithOpenOrder(1); // the last unit is ordered: pending, quantity 0
        expect((await api.get(`/store/inventory/${pet.id}`)).body).toEqual({ petId: pet.id, quantity: 0, status: "pending" });
        for (const status of ["sold", "available"] as const) {
          const res = await api.patch(`/pets/${pet.id}`, { status }, { key });
          expect(res.status, status).toBe(409);
          expect(res.body.code).toBe("invalid_transition");
        }
        expect((await api.get(`/pets?id=${pet.id}`)).body).toEqual([{ ...pet, status: "pending" }]);
        // With stock again, the hold can be released.
        expect((await api.put(`/store/inventory/${pet.id}`, { quantity: 2 }, { key })).status).toBe(200);
        const held = await api.patch(`/pets/${pet.id}`, { status: "pending" }, { key });
        expect(held.body.status).toBe("pending");
        expect((await api.patch(`/pets/${pet.id}`, { status: "available" }, { key })).body.status).toBe("available");
      });

      it("DELETE refuses a pet that an order references: 409 pet_has_orders", async () => {
        const { pet } = await petWithOpenOrder(3);
        const res = await api.delete(`/pets/${pet.id}`, { key });
        expect(res.status).toBe(409);
        expect(res.body.code).toBe("pet_has_orders");
        expect((await api.get(`/pets?id=${pet.id}`)).body).toHaveLength(1);
        expect((await api.get(`/store/inventory/${pet.id}`)).status).toBe(200);
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
