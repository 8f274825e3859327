/**
 * The Node server's in-process cache of public reads (src/runtime/node/memory-read-cache.ts):
 * hits, exact purges by the tags a write changed (docs/api.md#caching), TTL for writes
 * from elsewhere, conditional requests on hits, a bound in bytes (least recently
 * used first), and nothing private or keyed is ever stored.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp, responseHeaders } from "../../src/app";
import { parseConfig } from "../../src/config";
import { hitHeaders, memoryReadCache } from "../../src/runtime/node/memory-read-cache";
import { nodeTarget, TEST_ENV, type NodeTarget } from "../support/node-target";

let target: NodeTarget;
let app: ReturnType<typeof createApp>;
let clock = 1_000_000;
let staff: string;
let petId: number;
let categoryId: number;

async function call(method: string, path: string, options: { key?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  if (options.key) headers.Authorization = `Bearer ${options.key}`;
  if (options.body !== undefined) headers["Content-Type"] = "application/json";
  const res = await app.request(`http://localhost${path}`, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
}

beforeAll(async () => {
  target = await nodeTarget();
  staff = target.staffKey;
  const cache = memoryReadCache({ ttlMs: 5000, nowMs: () => clock });
  app = createApp({ db: target.db, config: parseConfig(TEST_ENV), log: () => {}, middleware: [cache.middleware], afterWrite: [cache.purge] });
  categoryId = (await call("POST", "/categories", { key: staff, body: { name: "Cached" } })).body.id;
  petId = (await call("POST", "/pets", { key: staff, body: { name: "Before", categoryId } })).body.id;
});

afterAll(async () => {
  await target.close();
});

describe("in-process read cache (Node)", () => {
  it("serves the second anonymous read from the cache, same body and ETag, fresh request id", async () => {
    const first = await call("GET", `/pets?id=${petId}`);
    const second = await call("GET", `/pets?id=${petId}`);
    expect(first.headers.get("x-cache")).toBe("MISS");
    expect(second.headers.get("x-cache")).toBe("HIT");
    expect(second.body).toEqual(first.body);
    expect(second.headers.get("etag")).toBe(first.headers.get("etag"));
    expect(second.headers.get("cache-control")).toBe(first.headers.get("cache-control"));
    expect(second.headers.get("x-request-id")).not.toBe(first.headers.get("x-request-id"));
  });

  it("a hit carries every header of the miss that stored it, with its own request id and budget", async () => {
    const first = await call("GET", `/pets/${petId}`);
    const second = await call("GET", `/pets/${petId}`);
    expect(second.headers.get("x-cache")).toBe("HIT");
    const perRequest = new Set(["x-request-id", "x-cache", "ratelimit-remaining"]);
    const others = (headers: Headers) => [...headers].filter(([name]) => !perRequest.has(name));
    expect(others(second.headers)).toEqual(others(first.headers));
    expect([...second.headers.keys()]).toEqual([...first.headers.keys()]);
    expect(Number(second.headers.get("ratelimit-remaining"))).toBe(Number(first.headers.get("ratelimit-remaining")) - 1);
  });

  it("a complete hit (answered before the app, src/runtime/node/cache-hits.ts) has the headers of the app's own answer", async () => {
    const cache = memoryReadCache({ ttlMs: 60_000, nowMs: () => clock, responseHeaders: await responseHeaders() });
    const cached = createApp({ db: target.db, config: parseConfig(TEST_ENV), log: () => {}, middleware: [cache.middleware] });
    const path = `/pets?id=${petId}&status=available`;
    const miss = await cached.request(`http://localhost${path}`);
    const own = await cached.request(`http://localhost${path}`);
    expect([miss.headers.get("x-cache"), own.headers.get("x-cache")]).toEqual(["MISS", "HIT"]);
    const hit = cache.completeHit(path)!;
    const header = (name: string) => own.headers.get(name)!;
    const decision = {
      allowed: true,
      limit: Number(header("ratelimit-limit")),
      remaining: Number(header("ratelimit-remaining")),
      resetSeconds: Number(header("ratelimit-reset")),
    };
    const fast = new Headers(hitHeaders(hit.headers, header("x-request-id"), decision));
    // Content-Length: the HTTP server adds it to every answer; a complete hit states it itself.
    expect(fast.get("content-length")).toBe(String(Buffer.byteLength(hit.body)));
    fast.delete("content-length");
    expect([...fast]).toEqual([...own.headers]);
    expect(hit.body).toBe(await own.text());
    // The same as the app's answer that stored it, but for the per-request values.
    const perRequest = new Set(["x-request-id", "x-cache", "ratelimit-remaining"]);
    const others = (headers: Headers) => [...headers].filter(([name]) => !perRequest.has(name));
    expect(others(fast)).toEqual(others(miss.headers));
    expect(hit.body).toBe(await miss.text());
  });

  it("answers If-None-Match on a hit with 304", async () => {
    const first = await call("GET", `/pets/${petId}`);
    const etag = first.headers.get("etag")!;
    const conditional = await call("GET", `/pets/${petId}`, { headers: { "If-None-Match": etag } });
    expect(conditional.status).toBe(304);
    expect(conditional.headers.get("x-cache")).toBe("HIT");
    expect(conditional.headers.get("deprecation")).toBe(first.headers.get("deprecation"));
  });

  it("a write through the app makes the next read fresh at once (item, lists and inventory)", async () => {
    await call("GET", `/pets/${petId}`);
    await call("GET", `/store/inventory/${petId}`);
    const patched = await call("PATCH", `/pets/${petId}`, { key: staff, body: { name: "After", status: "pending" } });
    expect(patched.status).toBe(200);
    const item = await call("GET", `/pets/${petId}`);
    expect(item.headers.get("x-cache")).toBe("MISS");
    expect(item.body.name).toBe("After");
    expect((await call("GET", `/pets?id=${petId}`)).body[0].name).toBe("After");
    expect((await call("GET", `/store/inventory/${petId}`)).body.status).toBe("pending");
  });

  it("a refused write purges nothing", async () => {
    await call("GET", `/pets/${petId}`);
    expect((await call("GET", `/pets/${petId}`)).headers.get("x-cache")).toBe("HIT");
    expect((await call("PATCH", `/pets/${petId}`, { key: staff, body: { categoryId: 9_999_999 } })).status).toBe(422);
    expect((await call("GET", `/pets/${petId}`)).headers.get("x-cache")).toBe("HIT");
  });

  it("a change made outside this process shows once the TTL has passed, not before", async () => {
    await call("GET", `/categories/${categoryId}`);
    await target.db.execute({ sql: "UPDATE categories SET name = 'Renamed elsewhere' WHERE id = ?", args: [categoryId] });
    expect((await call("GET", `/categories/${categoryId}`)).body.name).toBe("Cached");
    clock += 5001;
    const fresh = await call("GET", `/categories/${categoryId}`);
    expect(fresh.headers.get("x-cache")).toBe("MISS");
    expect(fresh.body.name).toBe("Renamed elsewhere");
  });

  it("never stores keyed requests, private responses or errors", async () => {
    await call("GET", `/pets/${petId}`, { key: staff });
    expect((await call("GET", `/pets/${petId}`, { key: staff })).headers.get("x-cache")).toBeNull();
    await call("GET", "/store/orders", { key: staff });
    expect((await call("GET", "/store/orders", { key: staff })).headers.get("x-cache")).toBeNull();
    await call("GET", "/pets/99999999");
    const missing = await call("GET", "/pets/99999999");
    expect(missing.status).toBe(404);
    expect(missing.headers.get("x-cache")).toBeNull();
  });

  it("purges exactly what a write changed: an order on one pet leaves the other pet's entries cached", async () => {
    const pets: number[] = [];
    for (const name of ["Seven", "Eight"]) {
      const id = (await call("POST", "/pets", { key: staff, body: { name, categoryId } })).body.id as number;
      expect((await call("PUT", `/store/inventory/${id}`, { key: staff, body: { quantity: 5 } })).status).toBe(200);
      pets.push(id);
    }
    const [seven, eight] = pets as [number, number];
    const paths = [`/pets/${seven}`, `/store/inventory/${seven}`, `/pets/${eight}`, `/store/inventory/${eight}`, `/store/inventory?petId=${eight}`];
    for (const path of paths) await call("GET", path);
    for (const path of paths) expect((await call("GET", path)).headers.get("x-cache"), path).toBe("HIT");

    expect((await call("POST", "/store/orders", { key: staff, body: { petId: seven, quantity: 1 } })).status).toBe(201);
    const inventory = await call("GET", `/store/inventory/${seven}`);
    expect(inventory.headers.get("x-cache")).toBe("MISS");
    expect(inventory.body.quantity).toBe(4);
    // The pet row did not change (still available), nor did anything of pet eight.
    for (const path of paths.filter((p) => p !== `/store/inventory/${seven}`)) {
      expect((await call("GET", path)).headers.get("x-cache"), path).toBe("HIT");
    }
  });

  it("keeps at most maxBytes of entries, dropping the oldest first", async () => {
    const small = createApp({
      db: target.db,
      config: parseConfig(TEST_ENV),
      log: () => {},
      middleware: [memoryReadCache({ ttlMs: 60_000, maxBytes: 4_000, nowMs: () => clock }).middleware],
    });
    const get = async (path: string) => (await small.request(`http://localhost${path}`)).headers.get("x-cache");
    const paths = Array.from({ length: 8 }, (_, i) => `/pets?id=${petId}&limit=${i + 1}`);
    for (const path of paths) expect(await get(path)).toBe("MISS");
    // Each entry is well over 500 bytes (headers and body): the first ones were dropped, the last one stays.
    expect(await get(paths[paths.length - 1]!)).toBe("HIT");
    expect(await get(paths[0]!)).toBe("MISS");
  });

  it("a hit keeps its entry: the least recently used goes first", async () => {
    const small = createApp({
      db: target.db,
      config: parseConfig(TEST_ENV),
      log: () => {},
      middleware: [memoryReadCache({ ttlMs: 60_000, maxBytes: 4_000, nowMs: () => clock }).middleware],
    });
    const get = async (path: string) => (await small.request(`http://localhost${path}`)).headers.get("x-cache");
    const [kept, ...others] = Array.from({ length: 9 }, (_, i) => `/pets?id=${petId}&limit=${i + 1}`);
    expect(await get(kept!)).toBe("MISS");
    for (const path of others) {
      expect(await get(path)).toBe("MISS");
      expect(await get(kept!), path).toBe("HIT");
    }
    expect(await get(others[0]!)).toBe("MISS");
  });
});
