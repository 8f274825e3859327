/**
 * Workers Cache purges (API.md §7, src/runtime/workers-cache.ts) against the
 * real Worker under workerd. Local workerd has no `ctx.cache`, so the Worker
 * posts each purge to the suite's recorder (test/support/purge-recorder.ts);
 * the purge is awaited before the response, so it is recorded by the time the
 * response arrives.
 *
 * Proofs, for every write route: exactly one purge call per request that
 * changed something public, with exactly the tags the committed rows make
 * stale (an order on one pet never names another pet, a quantity change never
 * names the pet lists); no purge call for refused writes or for writes that
 * change nothing public. And the edge policy on public reads.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, uniqueName, type ApiClient, type ApiResponse } from "../support/client";
import { purgesOf } from "../support/purge-recorder";
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

/** The tag lists of the purge calls the Worker made while answering `res`. */
async function purged(res: ApiResponse): Promise<string[][]> {
  const requestId = res.headers.get("x-request-id");
  expect(requestId).toBeTruthy();
  return (await purgesOf(target.purgeRecorderUrl, requestId!)).map((record) => [...record.tags].sort());
}

const pet = (id: number) => [`pet:${id}`, `inventory:${id}`, "pets", "inventory"].sort();

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

  it("inventory: a quantity change purges only that entry; a status change adds the pet and the lists", async () => {
    const id = await newPet(await newCategory());
    const more = await api.put(`/store/inventory/${id}`, { quantity: 7 }, { key: staff });
    expect(more.status).toBe(200);
    expect(await purged(more)).toEqual([[`inventory:${id}`]]);
    const none = await api.put(`/store/inventory/${id}`, { quantity: 0 }, { key: staff });
    expect(none.body.status).toBe("sold");
    expect(await purged(none)).toEqual([pet(id)]);
  });

  it("orders: placing purges that pet's inventory entry only, and the pet when its status moves; cancelling likewise", async () => {
    const categoryId = await newCategory();
    const id = await newPet(categoryId, 3);
    const other = await newPet(categoryId, 3);
    const first = await api.post("/store/orders", { petId: id, quantity: 1 }, { key: staff });
    expect(first.status).toBe(201);
    expect(await purged(first)).toEqual([[`inventory:${id}`]]);
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

  it("public reads carry the edge policy (stale-while-revalidate without s-maxage); keyed reads and private ones do not", async () => {
    const id = await newPet(await newCategory());
    const anonymous = await api.get(`/pets?id=${id}`);
    expect(anonymous.headers.get("cloudflare-cdn-cache-control")).toBe("public, max-age=30, stale-while-revalidate=60");
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
