/**
 * Edge caching of public reads in the Worker (API.md §7, src/runtime/edge-cache.ts),
 * against the real Worker under workerd (whose local Cache API is `caches.default`).
 *
 * Proofs: a repeated public read is served from the cache (`X-Cache: HIT`, and it
 * still shows a value the database no longer holds), a successful write purges
 * what it made stale (item, lists, other groups it changes) while a failed write
 * purges nothing, and responses to keyed requests or private responses are never
 * stored. Cache writes happen after the response (`waitUntil`), so "until HIT"
 * re-reads a bounded number of times instead of sleeping.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, uniqueName, type ApiClient, type ApiResponse } from "../support/client";
import { workerTarget, type WorkerTarget } from "../support/worker-target";

let target: WorkerTarget;
let api: ApiClient;
let key: string;

beforeAll(async () => {
  target = await workerTarget();
  api = await connect(target);
  key = target.staffKey;
});
afterAll(async () => {
  await target?.close();
});

const xCache = (res: ApiResponse) => res.headers.get("x-cache");

/** GET `path` anonymously until the edge serves it from the cache (at most 50 reads). */
async function getUntilHit(path: string): Promise<ApiResponse> {
  for (let attempt = 0; attempt < 50; attempt += 1) {
    const res = await api.get(path);
    expect(res.status, path).toBe(200);
    if (xCache(res) === "HIT") return res;
    expect(xCache(res), path).toBe("MISS");
  }
  throw new Error(`${path} was never served from the edge cache`);
}

async function createCategory(): Promise<{ id: number; name: string }> {
  const res = await api.post("/categories", { name: uniqueName("Edge cat") }, { key });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

async function createPet(categoryId: number): Promise<{ id: number; name: string; status: string }> {
  const res = await api.post("/pets", { name: uniqueName("Edge pet"), categoryId }, { key });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

describe("edge cache of public reads (worker)", () => {
  it("serves a repeated public GET from the cache, with fresh per-request headers", async () => {
    const category = await createCategory();
    const path = `/categories/${category.id}`;
    const first = await api.get(path);
    expect(first.status).toBe(200);
    expect(xCache(first)).toBe("MISS");
    expect(first.headers.get("cache-control")).toContain("s-maxage=30");

    const hit = await getUntilHit(path);
    expect(hit.body).toEqual(first.body);
    expect(hit.headers.get("etag")).toBe(first.headers.get("etag"));
    expect(hit.headers.get("cache-control")).toBe(first.headers.get("cache-control"));
    expect(hit.headers.get("x-request-id")).toBeTruthy();
    expect(hit.headers.get("x-request-id")).not.toBe(first.headers.get("x-request-id"));
    if (first.headers.has("ratelimit-limit")) expect(hit.headers.has("ratelimit-remaining")).toBe(true);

    // The hit does not read the database: a change made behind the Worker's back stays invisible…
    await target.db.$client.execute({
      sql: "UPDATE categories SET name = ?, version = version + 1 WHERE id = ?",
      args: [`${category.name} (changed behind the edge)`, category.id],
    });
    const stale = await api.get(path);
    expect(xCache(stale)).toBe("HIT");
    expect(stale.body.name).toBe(category.name);
    // …until a request that bypasses the cache (one with a key) reads it.
    const keyed = await api.get(path, { key });
    expect(xCache(keyed)).toBe("BYPASS");
    expect(keyed.body.name).toBe(`${category.name} (changed behind the edge)`);
  });

  it("answers If-None-Match from the cache with 304", async () => {
    const category = await createCategory();
    const path = `/categories/${category.id}`;
    const hit = await getUntilHit(path);
    const etag = hit.headers.get("etag")!;
    const res = await api.get(path, { headers: { "If-None-Match": etag } });
    expect(res.status).toBe(304);
    expect(xCache(res)).toBe("HIT");
    expect(res.headers.get("etag")).toBe(etag);
    expect(res.headers.get("cache-control")).toBe(hit.headers.get("cache-control"));
    const other = await api.get(path, { headers: { "If-None-Match": '"not-the-tag"' } });
    expect(other.status).toBe(200);
    expect(other.body).toEqual(hit.body);
  });

  it("keys entries by the full URL: each query is its own entry", async () => {
    const a = await api.get("/categories?limit=3");
    const b = await api.get("/categories?limit=4");
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    await getUntilHit("/categories?limit=3");
    const again = await api.get("/categories?limit=4");
    expect(["MISS", "HIT"]).toContain(xCache(again));
    expect(again.body.length).toBeLessThanOrEqual(4);
  });

  it("purges the item and its lists after a successful write, and keeps them after a failed one", async () => {
    const category = await createCategory();
    const item = `/categories/${category.id}`;
    const list = `/categories?limit=100`;
    await getUntilHit(item);
    await getUntilHit(list);

    // A refused write (400) changes nothing and purges nothing.
    const refused = await api.patch(item, { name: "" }, { key });
    expect(refused.status).toBe(400);
    expect(xCache(await api.get(item))).toBe("HIT");

    const renamed = uniqueName("Edge cat renamed");
    const patched = await api.patch(item, { name: renamed }, { key });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);

    const afterItem = await api.get(item);
    expect(xCache(afterItem)).toBe("MISS");
    expect(afterItem.body.name).toBe(renamed);
    expect(afterItem.headers.get("etag")).not.toBeNull();
    const afterList = await api.get(list);
    expect(xCache(afterList)).toBe("MISS");
    const listed = (afterList.body as { id: number; name: string }[]).find((c) => c.id === category.id);
    if (listed) expect(listed.name).toBe(renamed);

    // A creation purges the lists too: the new category shows up at once.
    await getUntilHit(list);
    const created = await createCategory();
    const relisted = await api.get(list);
    expect(xCache(relisted)).toBe("MISS");
    if ((relisted.body as unknown[]).length < 100) {
      expect((relisted.body as { id: number }[]).map((c) => c.id)).toContain(created.id);
    }

    // A delete purges the item: the next read is the 404, not the cached 200.
    await getUntilHit(`/categories/${created.id}`);
    const deleted = await api.delete(`/categories/${created.id}`, { key });
    expect(deleted.status).toBe(204);
    const gone = await api.get(`/categories/${created.id}`);
    expect(gone.status).toBe(404);
  });

  it("purges every group a write changes: stock changes purge inventory and pets", async () => {
    const category = await createCategory();
    const pet = await createPet(category.id);
    const inventoryPath = `/store/inventory/${pet.id}`;
    const petPath = `/pets?id=${pet.id}`;
    const before = await getUntilHit(inventoryPath);
    expect(before.body.quantity).toBe(1);
    await getUntilHit(petPath);

    const put = await api.put(inventoryPath, { quantity: 0 }, { key });
    expect(put.status, JSON.stringify(put.body)).toBe(200);

    const inventory = await api.get(inventoryPath);
    expect(xCache(inventory)).toBe("MISS");
    expect(inventory.body.quantity).toBe(0);
    const pets = await api.get(petPath);
    expect(xCache(pets)).toBe("MISS");
    expect(pets.body[0].status).not.toBe("available");
  });

  it("never stores responses to keyed requests or private responses", async () => {
    // A private response (depends on the caller).
    for (let i = 0; i < 3; i += 1) {
      const me = await api.get("/accounts/me", { key });
      expect(me.status).toBe(200);
      expect(me.headers.get("cache-control")).toBe("private, no-store");
      expect(xCache(me)).toBe("BYPASS");
    }
    // A public route read with a key: neither served from nor stored in the cache.
    const category = await createCategory();
    const path = `/categories/${category.id}`;
    for (let i = 0; i < 3; i += 1) expect(xCache(await api.get(path, { key }))).toBe("BYPASS");
    expect(xCache(await api.get(path))).toBe("MISS");
    // Nor are public responses outside the catalogue (they change with each deployment).
    for (let i = 0; i < 2; i += 1) expect(xCache(await api.get("/openapi.json"))).toBe("BYPASS");
    // Errors are not stored either.
    for (let i = 0; i < 3; i += 1) {
      const missing = await api.get("/categories/9007199254740991");
      expect(missing.status).toBe(404);
      expect(xCache(missing)).toBe("BYPASS");
    }
  });
});
