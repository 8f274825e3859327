/**
 * Workers Cache purges (docs/api.md#caching, docs/caching.md) against the real Worker
 * under workerd, through the purge coordinator Durable Object
 * (src/runtime/workers/purge-coordinator.ts) with a budget no file exhausts. Local
 * workerd has no `ctx.cache`, so the Worker posts each purge call to the
 * suite's recorder (test/support/purge-recorder.ts); a write granted a call
 * makes it before its response, so it is recorded by the time the response
 * arrives.
 *
 * Proofs, for every write route: the write's own purge call names exactly the
 * catalogue tags the committed rows make stale (an order on one pet never
 * names another pet; inventory is never purged: it is short-lived at the
 * edge); no purge for refused writes or for writes that change nothing the
 * edge purges; a second purge of the same tags after the read window, sent by
 * the coordinator's alarm. And the edge policies on public reads.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, uniqueName, type ApiClient, type ApiResponse } from "../support/client";
import { PURGE_REPEAT_MS, purgesOf } from "../support/purge-recorder";
import { workerTarget, type WorkerTarget } from "../support/worker-target";

let target: WorkerTarget;
let api: ApiClient;
let staff: string;

beforeAll(async () => {
  target = await workerTarget();
  api = await connect(target);
  staff = target.staffKey;
});
afterAll(async () => {
  await target?.close();
});

function requestIdOf(res: ApiResponse): string {
  const requestId = res.headers.get("x-request-id");
  expect(requestId).toBeTruthy();
  return requestId!;
}

/** The tags purged for `res` by the call made while answering it: `[tags]`, or `[]` when none was made. */
async function purged(res: ApiResponse): Promise<string[][]> {
  const requestId = requestIdOf(res);
  const [first] = await purgesOf(target.purgeRecorderUrl, requestId);
  return first ? first.parts.filter((p) => p.source === requestId).map((p) => [...p.tags].sort()) : [];
}

const pet = (id: number) => [`pet:${id}`, "pets"].sort();

async function newCategory(): Promise<number> {
  const res = await api.post("/categories", { name: uniqueName("Purge cat") }, { key: staff });
  expect(res.status).toBe(201);
  return res.body.id;
}

async function newPet(categoryId: number, quantity?: number): Promise<number> {
  const res = await api.post("/pets", { name: uniqueName("Purge pet"), categoryId }, { key: staff });
  expect(res.status).toBe(201);
  if (quantity !== undefined) expect((await api.put(`/store/inventory/${res.body.id}`, { quantity }, { key: staff })).status).toBe(200);
  return res.body.id;
}

describe("Workers Cache purges (worker)", () => {
  it("categories: create purges the list and the item, rename the item, delete both", async () => {
    const created = await api.post("/categories", { name: uniqueName("Purge cat") }, { key: staff });
    const id = created.body.id as number;
    expect(await purged(created)).toEqual([["categories", `category:${id}`]]);
    const renamed = await api.patch(`/categories/${id}`, { name: uniqueName("Renamed") }, { key: staff });
    expect(renamed.status).toBe(200);
    expect(await purged(renamed)).toEqual([[`category:${id}`]]);
    const deleted = await api.delete(`/categories/${id}`, { key: staff });
    expect(deleted.status).toBe(204);
    expect(await purged(deleted)).toEqual([["categories", `category:${id}`]]);
  });

  it("pets: create, PUT, PATCH and DELETE purge that pet, its inventory entry and the lists", async () => {
    const categoryId = await newCategory();
    const created = await api.post("/pets", { name: uniqueName("Purge pet"), categoryId }, { key: staff });
    const id = created.body.id as number;
    expect(await purged(created)).toEqual([pet(id)]);
    const put = await api.put(`/pets/${id}`, { name: uniqueName("Put"), categoryId, status: "available" }, { key: staff });
    expect(put.status).toBe(200);
    expect(await purged(put)).toEqual([pet(id)]);
    const patched = await api.patch(`/pets/${id}`, { status: "pending" }, { key: staff });
    expect(patched.status).toBe(200);
    expect(await purged(patched)).toEqual([pet(id)]);
    const deleted = await api.delete(`/pets/${id}`, { key: staff });
    expect(deleted.status).toBe(204);
    expect(await purged(deleted)).toEqual([pet(id)]);
  });

  it("inventory: a quantity change purges nothing (short-lived at the edge); a status change purges the pet and the list", async () => {
    const id = await newPet(await newCategory());
    const more = await api.put(`/store/inventory/${id}`, { quantity: 7 }, { key: staff });
    expect(more.status).toBe(200);
    expect(await purged(more)).toEqual([]);
    const none = await api.put(`/store/inventory/${id}`, { quantity: 0 }, { key: staff });
    expect(none.body.status).toBe("sold");
    expect(await purged(none)).toEqual([pet(id)]);
  });

  it("orders: placing purges nothing, and the pet when its status moves; cancelling likewise", async () => {
    const categoryId = await newCategory();
    const id = await newPet(categoryId, 3);
    const other = await newPet(categoryId, 3);
    const first = await api.post("/store/orders", { petId: id, quantity: 1 }, { key: staff });
    expect(first.status).toBe(201);
    expect(await purged(first)).toEqual([]);
    const last = await api.post("/store/orders", { petId: id, quantity: 2 }, { key: staff });
    expect(last.status).toBe(201);
    expect(await purged(last)).toEqual([pet(id)]);
    for (const tags of [...(await purged(first)), ...(await purged(last))]) expect(tags.join(",")).not.toContain(`:${other}`);

    const cancelled = await api.delete(`/store/orders/${last.body.id}`, { key: staff });
    expect(cancelled.status).toBe(204);
    expect(await purged(cancelled)).toEqual([pet(id)]);
    const fulfilled = await api.patch(`/store/orders/${first.body.id}`, { complete: true }, { key: staff });
    expect(fulfilled.status).toBe(200);
    expect(await purged(fulfilled)).toEqual([]);
  });

  it("refused writes and writes to private resources make no purge call", async () => {
    const categoryId = await newCategory();
    const id = await newPet(categoryId);
    const stale = await api.patch(`/pets/${id}`, { name: "x" }, { key: staff, headers: { "If-Match": '"stale"' } });
    expect(stale.status).toBe(412);
    expect(await purged(stale)).toEqual([]);
    const tooMany = await api.post("/store/orders", { petId: id, quantity: 5 }, { key: staff });
    expect(tooMany.status).toBe(409);
    expect(await purged(tooMany)).toEqual([]);
    const account = await api.post("/accounts", { name: "Purge", email: `${uniqueName("p").replace(/\W/g, "")}@example.com` });
    expect(account.status).toBe(201);
    expect(await purged(account)).toEqual([]);
    const key = await api.post("/accounts/me/keys", { name: "second" }, { key: staff });
    expect(key.status).toBe(201);
    expect(await purged(key)).toEqual([]);
  });

  it("a write's tags are purged a second time after the read window, by the coordinator's alarm", async () => {
    const categoryId = await newCategory();
    const renamed = await api.patch(`/categories/${categoryId}`, { name: uniqueName("Again") }, { key: staff });
    expect(renamed.status).toBe(200);
    const requestId = requestIdOf(renamed);
    const deadline = Date.now() + PURGE_REPEAT_MS + 15_000;
    let calls = await purgesOf(target.purgeRecorderUrl, requestId);
    while (calls.length < 2 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      calls = await purgesOf(target.purgeRecorderUrl, requestId);
    }
    const mine = calls.map((call) => call.parts.filter((p) => p.source === requestId).flatMap((p) => p.tags));
    expect(mine).toEqual([[`category:${categoryId}`], [`category:${categoryId}`]]);
  });

  it("the alarm's call-back path without the coordinator's nonce is an unknown route (JSON 404)", async () => {
    const plain = await target.fetch("/__edge-cache/flush", { method: "POST" });
    expect(plain.status).toBe(404);
    expect(await plain.json()).toMatchObject({ code: expect.any(String), status: 404 });
  });

  it("public reads carry the edge policies (no s-maxage, bounded stale-if-error; inventory short-lived); keyed reads and private ones do not", async () => {
    const id = await newPet(await newCategory());
    const anonymous = await api.get(`/pets?id=${id}`);
    expect(anonymous.headers.get("cloudflare-cdn-cache-control")).toBe("public, max-age=30, stale-while-revalidate=60, stale-if-error=300");
    for (const path of [`/store/inventory/${id}`, `/store/inventory?petId=${id}`]) {
      expect((await api.get(path)).headers.get("cloudflare-cdn-cache-control"), path).toBe("public, max-age=5, stale-while-revalidate=5, stale-if-error=60");
    }
    const keyed = await api.get(`/pets?id=${id}`, { key: staff });
    expect(keyed.headers.get("cloudflare-cdn-cache-control")).toBeNull();
    const orders = await api.get("/store/orders", { key: staff });
    expect(orders.headers.get("cloudflare-cdn-cache-control")).toBeNull();
    expect(anonymous.headers.get("x-cache")).toBeNull(); // Cloudflare reports hits itself (Cf-Cache-Status)
    // What the edge stores is replayed to everyone: no request id, no caller's budget.
    expect(anonymous.headers.get("x-request-id")).toBeNull();
    expect(anonymous.headers.get("ratelimit-remaining")).toBeNull();
    expect(keyed.headers.get("x-request-id")).toBeTruthy();
    expect(keyed.headers.get("ratelimit-remaining")).toBeTruthy();
  });
});
