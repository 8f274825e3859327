/**
 * End-to-end scenarios of /categories (docs/api.md: #resources, #endpoints,
 * #idempotency-key, #errors, #caching), written
 * against the Target interface so the Node and Worker suites share them.
 */
import { describe, expect, it } from "vitest";
import { uniqueName, type ApiClient, type ApiResponse } from "../support/client";
import type { Target } from "../support/target";
import { api, key, openStaff } from "../support/cast";

export interface CategoryBody {
  id: number;
  name: string;
  description?: string;
}

/** Public-read cache policy of docs/api.md#caching. */
export const PUBLIC_CACHE_CONTROL = "public, max-age=0, s-maxage=30, stale-while-revalidate=60";

/** Create a category (asserting 201) and return it. */
export async function createCategory(api: ApiClient, key: string, body: { name?: string; description?: string } = {}): Promise<CategoryBody> {
  const res = await api.post<CategoryBody>("/categories", { name: uniqueName("Category"), ...body }, { key });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

/** Assert a 400 `validation_error` whose details name each of `paths` (and may name more). */
export function expectValidationError(res: ApiResponse, paths: string[]): void {
  expect(res.status, JSON.stringify(res.body)).toBe(400);
  expect(res.body.code).toBe("validation_error");
  const got = (res.body.details as { path: string; message: string }[]).map((d) => d.path);
  expect(got).toEqual(expect.arrayContaining(paths));
  for (const detail of res.body.details as { path: string; message: string }[]) expect(detail.message).toEqual(expect.any(String));
}

/**
 * Follow `Link: rel="next"` from `firstPath` to the end (or `maxPages`); returns the pages.
 * Asserts each page holds at most `limit` items and the links keep the query.
 */
export async function walkPages<T>(api: ApiClient, firstPath: string, limit: number, maxPages = Infinity): Promise<T[][]> {
  const pages: T[][] = [];
  let path: string | undefined = firstPath;
  while (path && pages.length < maxPages) {
    const res: ApiResponse<T[]> = await api.get<T[]>(path);
    expect(res.status, path).toBe(200);
    expect(res.body.length).toBeLessThanOrEqual(limit);
    pages.push(res.body);
    const link = res.headers.get("link");
    if (!link) break;
    const match = /^<([^>]+)>; rel="next"$/.exec(link);
    expect(match, link).not.toBeNull();
    const next = new URL(match![1]!, "http://x");
    expect(next.pathname).toBe(new URL(firstPath, "http://x").pathname);
    expect(next.searchParams.get("limit")).toBe(String(limit));
    expect(next.searchParams.get("cursor")).toBeTruthy();
    expect(pages.length, "pagination terminates").toBeLessThan(10_000);
    path = `${next.pathname}${next.search}`;
  }
  return pages;
}

/** Register the /categories scenarios against the target `getTarget()` returns (called once per test file). */
export function categoriesScenarios(getTarget: () => Target): void {
  describe("categories", () => {
    openStaff(getTarget);

    describe("POST /categories", () => {
      it("creates a category: 201, Location, the Category shape", async () => {
        const name = uniqueName("Dogs");
        const res = await api.post("/categories", { name, description: "Domestic dogs" }, { key });
        expect(res.status).toBe(201);
        expect(res.body).toEqual({ id: expect.any(Number), name, description: "Domestic dogs" });
        expect(res.headers.get("location")).toBe(`/categories/${res.body.id}`);
        const again = await api.get(res.headers.get("location")!);
        expect(again.status).toBe(200);
        expect(again.body).toEqual(res.body);
      });

      it("leaves description out when none is given", async () => {
        const res = await api.post("/categories", { name: uniqueName("Cats") }, { key });
        expect(res.status).toBe(201);
        expect(Object.keys(res.body).sort()).toEqual(["id", "name"]);
      });

      it("trims the name and keeps Unicode, &amp; and emoji byte for byte", async () => {
        const name = uniqueName("Cão & Gato &amp; Međimurje 🐕‍🦺 <b>");
        const description = "  Chiens «français» &amp; <i>chats</i> 🐈  ";
        const res = await api.post("/categories", { name: `  ${name}\t `, description }, { key });
        expect(res.status).toBe(201);
        expect(res.body.name).toBe(name);
        expect(res.body.description).toBe(description); // only names are trimmed
        const got = await api.get(`/categories/${res.body.id}`);
        expect(got.body).toEqual({ id: res.body.id, name, description });
      });

      it("accepts a 100-character name and a 1000-character description", async () => {
        const name = uniqueName("L").padEnd(100, "x");
        const res = await api.post("/categories", { name, description: "d".repeat(1000) }, { key });
        expect(res.status).toBe(201);
        expect(res.body.name).toBe(name);
      });

      it("rejects a duplicate name case-insensitively: 409 duplicate_name", async () => {
        const name = uniqueName("Ärger Élan");
        await createCategory(api, key, { name });
        for (const variant of [name, name.toUpperCase(), name.toLowerCase(), `  ${name}  `]) {
          const res = await api.post("/categories", { name: variant }, { key });
          expect(res.status, variant).toBe(409);
          expect(res.body.code).toBe("duplicate_name");
        }
      });

      it.each([
        ["missing name", {}, ["body.name"]],
        ["empty name", { name: "" }, ["body.name"]],
        ["whitespace name", { name: "   " }, ["body.name"]],
        ["101-character name", { name: "n".repeat(101) }, ["body.name"]],
        ["1001-character description", { name: "ok", description: "d".repeat(1001) }, ["body.description"]],
        ["name of the wrong type", { name: 42 }, ["body.name"]],
        ["description of the wrong type", { name: "ok", description: ["x"] }, ["body.description"]],
        ["unknown field", { name: "ok", colour: "brown" }, ["body.colour"]],
        ["read-only id", { id: 7, name: "ok" }, ["body.id"]],
        ["several problems", { id: 7, name: 1, extra: true }, ["body.id", "body.name", "body.extra"]],
      ])("rejects %s: 400 validation_error naming each path", async (_label, body, paths) => {
        expectValidationError(await api.post("/categories", body, { key }), paths);
      });

      it("rejects a body that is not an object", async () => {
        for (const raw of ["[]", "null", "42", '"name"']) {
          const res = await api.post("/categories", undefined, { key, rawBody: raw, headers: { "Content-Type": "application/json" } });
          expect(res.status, raw).toBe(400);
          expect(res.body.code).toBe("validation_error");
        }
      });
    });

    describe("GET /categories/{categoryId}", () => {
      it("returns the category with a strong ETag and public Cache-Control; If-None-Match → 304", async () => {
        const category = await createCategory(api, key, { description: "x" });
        const res = await api.get(`/categories/${category.id}`);
        expect(res.status).toBe(200);
        expect(res.body).toEqual(category);
        const etag = res.headers.get("etag");
        expect(etag).toMatch(/^"[^"]+"$/);
        expect(res.headers.get("cache-control")).toBe(PUBLIC_CACHE_CONTROL);

        const cached = await api.get(`/categories/${category.id}`, { headers: { "If-None-Match": etag! } });
        expect(cached.status).toBe(304);
        expect(cached.body).toBeNull();
        expect(cached.headers.get("etag")).toBe(etag);
        expect(cached.headers.get("cache-control")).toBe(PUBLIC_CACHE_CONTROL);

        const other = await api.get(`/categories/${category.id}`, { headers: { "If-None-Match": '"something-else"' } });
        expect(other.status).toBe(200);

        await api.patch(`/categories/${category.id}`, { description: "y" }, { key });
        const changed = await api.get(`/categories/${category.id}`, { headers: { "If-None-Match": etag! } });
        expect(changed.status).toBe(200);
        expect(changed.headers.get("etag")).not.toBe(etag);
        expect(changed.body.description).toBe("y");
      });

      it("answers 404 not_found for a category that does not exist", async () => {
        const category = await createCategory(api, key);
        expect((await api.delete(`/categories/${category.id}`, { key })).status).toBe(204);
        const res = await api.get(`/categories/${category.id}`);
        expect(res.status).toBe(404);
        expect(res.body.code).toBe("not_found");
      });
    });

    describe("GET /categories", () => {
      it("returns a bare array ordered by id, paginated with Link rel=next across pages", async () => {
        const mine = [await createCategory(api, key), await createCategory(api, key), await createCategory(api, key)];
        const all = (await walkPages<CategoryBody>(api, "/categories?limit=100", 100)).flat();
        const ids = all.map((c) => c.id);
        expect(ids).toEqual([...ids].sort((a, b) => a - b));
        expect(new Set(ids).size).toBe(ids.length);
        for (const category of mine) expect(all).toContainEqual(category);

        // Small pages: full pages joined by Link, continuing where the previous one stopped.
        const small = await walkPages<CategoryBody>(api, "/categories?limit=2", 2, 3);
        expect(small).toHaveLength(3);
        for (const page of small) expect(page).toHaveLength(2);
        const smallIds = small.flat().map((c) => c.id);
        expect(smallIds).toEqual([...smallIds].sort((a, b) => a - b));
        expect(new Set(smallIds).size).toBe(6);
      });

      it("defaults to pages of 20 and accepts limit 1..100", async () => {
        while ((await api.get("/categories?limit=21")).body.length < 21) await createCategory(api, key);
        const res = await api.get("/categories");
        expect(res.status).toBe(200);
        expect(Array.isArray(res.body)).toBe(true);
        expect(res.body).toHaveLength(20);
        expect(res.headers.get("link")).toMatch(/rel="next"/);
        expect((await api.get("/categories?limit=1")).body).toHaveLength(1);
        expect((await api.get("/categories?limit=100")).status).toBe(200);
      });

      it.each(["0", "101", "-1", "1.5", "abc", ""])("rejects limit=%s with 400 validation_error", async (limit) => {
        expectValidationError(await api.get(`/categories?limit=${limit}`), ["query.limit"]);
      });

      it("carries an ETag and public Cache-Control; If-None-Match → 304", async () => {
        await createCategory(api, key);
        const res = await api.get("/categories?limit=5");
        expect(res.headers.get("cache-control")).toBe(PUBLIC_CACHE_CONTROL);
        const etag = res.headers.get("etag")!;
        expect(etag).toMatch(/^"[^"]+"$/);
        const cached = await api.get("/categories?limit=5", { headers: { "If-None-Match": etag } });
        expect(cached.status).toBe(304);
        expect(cached.body).toBeNull();
      });
    });

    describe("PATCH /categories/{categoryId}", () => {
      it("changes the name and/or description; null removes the description", async () => {
        const category = await createCategory(api, key, { description: "old" });
        const name = uniqueName("Renamed ✓");
        const renamed = await api.patch(`/categories/${category.id}`, { name: `  ${name} ` }, { key });
        expect(renamed.status).toBe(200);
        expect(renamed.body).toEqual({ id: category.id, name, description: "old" });

        const described = await api.patch(`/categories/${category.id}`, { description: "new &amp; 🦜" }, { key });
        expect(described.body).toEqual({ id: category.id, name, description: "new &amp; 🦜" });

        const cleared = await api.patch(`/categories/${category.id}`, { description: null }, { key });
        expect(cleared.status).toBe(200);
        expect(cleared.body).toEqual({ id: category.id, name });
        expect((await api.get(`/categories/${category.id}`)).body).toEqual({ id: category.id, name });
      });

      it("may change only the case of its own name", async () => {
        const category = await createCategory(api, key, { name: uniqueName("lower case") });
        const res = await api.patch(`/categories/${category.id}`, { name: category.name.toUpperCase() }, { key });
        expect(res.status).toBe(200);
        expect(res.body.name).toBe(category.name.toUpperCase());
      });

      it("rejects a name another category has (any case): 409 duplicate_name", async () => {
        const taken = await createCategory(api, key);
        const category = await createCategory(api, key);
        const res = await api.patch(`/categories/${category.id}`, { name: taken.name.toUpperCase() }, { key });
        expect(res.status).toBe(409);
        expect(res.body.code).toBe("duplicate_name");
        expect((await api.get(`/categories/${category.id}`)).body).toEqual(category);
      });

      it.each([
        ["an empty body", {}, ["body"]],
        ["an unknown field", { colour: "red" }, ["body.colour"]],
        ["the read-only id", { id: 1 }, ["body.id"]],
        ["a name of the wrong type", { name: false }, ["body.name"]],
        ["a whitespace name", { name: "  " }, ["body.name"]],
        ["a 1001-character description", { description: "d".repeat(1001) }, ["body.description"]],
      ])("rejects %s: 400 validation_error", async (_label, body, paths) => {
        const category = await createCategory(api, key);
        expectValidationError(await api.patch(`/categories/${category.id}`, body, { key }), paths);
      });

      it("answers 404 not_found for a category that does not exist", async () => {
        const category = await createCategory(api, key);
        await api.delete(`/categories/${category.id}`, { key });
        const res = await api.patch(`/categories/${category.id}`, { name: uniqueName("x") }, { key });
        expect(res.status).toBe(404);
        expect(res.body.code).toBe("not_found");
      });

      it("honours If-Match: stale ETag → 412 precondition_failed, current ETag or * → 200", async () => {
        const category = await createCategory(api, key);
        const first = (await api.get(`/categories/${category.id}`)).headers.get("etag")!;
        expect((await api.patch(`/categories/${category.id}`, { description: "one" }, { key, headers: { "If-Match": first } })).status).toBe(200);

        const stale = await api.patch(`/categories/${category.id}`, { description: "lost update" }, { key, headers: { "If-Match": first } });
        expect(stale.status).toBe(412);
        expect(stale.body.code).toBe("precondition_failed");
        expect((await api.get(`/categories/${category.id}`)).body.description).toBe("one");

        const weak = await api.patch(`/categories/${category.id}`, { description: "weak" }, { key, headers: { "If-Match": `W/${first}` } });
        expect(weak.status).toBe(412);

        const current = (await api.get(`/categories/${category.id}`)).headers.get("etag")!;
        const ok = await api.patch(`/categories/${category.id}`, { description: "two" }, { key, headers: { "If-Match": `"nope", ${current}` } });
        expect(ok.status).toBe(200);
        const three = await api.patch(`/categories/${category.id}`, { description: "three" }, { key, headers: { "If-Match": "*" } });
        expect(three.status).toBe(200);
        // The response carries the new ETag: the next conditional write needs no GET.
        expect(three.headers.get("etag")).toBe((await api.get(`/categories/${category.id}`)).headers.get("etag"));
        expect(
          (await api.patch(`/categories/${category.id}`, { description: "four" }, { key, headers: { "If-Match": three.headers.get("etag")! } })).status,
        ).toBe(200);
      });
    });

    describe("DELETE /categories/{categoryId}", () => {
      it("deletes: 204 with no body, then 404 on read and on a second delete", async () => {
        const category = await createCategory(api, key);
        const res = await api.delete(`/categories/${category.id}`, { key });
        expect(res.status).toBe(204);
        expect(res.body).toBeNull();
        expect((await api.get(`/categories/${category.id}`)).status).toBe(404);
        const again = await api.delete(`/categories/${category.id}`, { key });
        expect(again.status).toBe(404);
        expect(again.body.code).toBe("not_found");
      });

      it("refuses while pets reference it: 409 category_in_use; succeeds once they are gone", async () => {
        const category = await createCategory(api, key);
        const pet = await api.post("/pets", { name: uniqueName("Rex"), categoryId: category.id }, { key });
        expect(pet.status).toBe(201);
        const res = await api.delete(`/categories/${category.id}`, { key });
        expect(res.status).toBe(409);
        expect(res.body.code).toBe("category_in_use");
        expect((await api.get(`/categories/${category.id}`)).status).toBe(200);
        expect((await api.delete(`/pets/${pet.body.id}`, { key })).status).toBe(204);
        expect((await api.delete(`/categories/${category.id}`, { key })).status).toBe(204);
      });

      it("honours If-Match: stale ETag → 412 and nothing deleted, current ETag → 204", async () => {
        const category = await createCategory(api, key);
        const etag = (await api.get(`/categories/${category.id}`)).headers.get("etag")!;
        await api.patch(`/categories/${category.id}`, { description: "changed" }, { key });
        const stale = await api.delete(`/categories/${category.id}`, { key, headers: { "If-Match": etag } });
        expect(stale.status).toBe(412);
        expect(stale.body.code).toBe("precondition_failed");
        expect((await api.get(`/categories/${category.id}`)).status).toBe(200);
        const current = (await api.get(`/categories/${category.id}`)).headers.get("etag")!;
        expect((await api.delete(`/categories/${category.id}`, { key, headers: { "If-Match": current } })).status).toBe(204);
      });
    });
  });
}
