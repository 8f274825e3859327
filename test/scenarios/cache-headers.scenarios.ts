/**
 * Cache headers of every GET in the served document (docs/api.md#caching), on both
 * runtimes: public reads carry the shared-cache policy, `Vary: Authorization`
 * and a `Cache-Tag` naming exactly what they show; keyed requests, private
 * reads and errors carry no tags and are stored by no shared cache.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, uniqueName, type ApiClient, type ApiResponse } from "../support/client";
import type { Target } from "../support/target";
import { encodeCursor } from "../../src/http/pagination";

const PUBLIC = "public, max-age=0, s-maxage=30, stale-while-revalidate=60";

interface Fixture {
  categoryId: number;
  petId: number;
  orderId: number;
  webhookId: number;
}

/** Every GET of the document: its concrete path, and the tags a public answer must carry (null: private or meta). */
function reads(f: Fixture): Record<string, { path: string; tags: string[] | null }> {
  return {
    "/pets": { path: `/pets?id=${f.petId}`, tags: ["pets", `pet:${f.petId}`] },
    "/pets/{petId}": { path: `/pets/${f.petId}`, tags: [`pet:${f.petId}`] },
    "/categories": { path: `/categories?limit=1${cursorBefore(f.categoryId)}`, tags: ["categories", `category:${f.categoryId}`] },
    "/categories/{categoryId}": { path: `/categories/${f.categoryId}`, tags: [`category:${f.categoryId}`] },
    "/store/inventory": { path: `/store/inventory?petId=${f.petId}`, tags: ["inventory", `inventory:${f.petId}`] },
    "/store/inventory/{petId}": { path: `/store/inventory/${f.petId}`, tags: [`inventory:${f.petId}`] },
    "/store/orders": { path: "/store/orders", tags: null },
    "/store/orders/{orderId}": { path: `/store/orders/${f.orderId}`, tags: null },
    "/accounts/me": { path: "/accounts/me", tags: null },
    "/accounts/me/keys": { path: "/accounts/me/keys", tags: null },
    "/events": { path: "/events", tags: null },
    "/webhooks": { path: "/webhooks", tags: null },
    "/webhooks/{webhookId}": { path: `/webhooks/${f.webhookId}`, tags: null },
    "/webhooks/{webhookId}/deliveries": { path: `/webhooks/${f.webhookId}/deliveries`, tags: null },
    "/health": { path: "/health", tags: null },
    "/openapi.json": { path: "/openapi.json", tags: null },
    "/docs": { path: "/docs", tags: null },
  };
}

/** The `cursor` parameter of the page that starts at `id` (none for the first id). */
function cursorBefore(id: number): string {
  return id > 1 ? `&cursor=${encodeCursor(id - 1)}` : "";
}

const tagsOf = (res: ApiResponse) => (res.headers.get("cache-tag") ?? "").split(",").filter(Boolean).sort();

export function cacheHeadersScenarios(getTarget: () => Target): void {
  describe("cache headers of reads", () => {
    let api: ApiClient;
    let staff: string;
    let fixture: Fixture;
    let documentGets: string[];

    beforeAll(async () => {
      const target = getTarget();
      api = await connect(target);
      staff = target.staffKey;
      const category = await api.post("/categories", { name: uniqueName("Tagged") }, { key: staff });
      const pet = await api.post("/pets", { name: uniqueName("Tagged pet"), categoryId: category.body.id }, { key: staff });
      await api.put(`/store/inventory/${pet.body.id}`, { quantity: 5 }, { key: staff });
      const order = await api.post("/store/orders", { petId: pet.body.id, quantity: 1 }, { key: staff });
      // A subscription to an event this file never causes, removed afterwards.
      const webhook = await api.post("/webhooks", { url: "http://127.0.0.1:9/hook", events: ["category.deleted"] }, { key: staff });
      expect([category.status, pet.status, order.status, webhook.status]).toEqual([201, 201, 201, 201]);
      fixture = { categoryId: category.body.id, petId: pet.body.id, orderId: order.body.id, webhookId: webhook.body.id };
      const document = (await api.get("/openapi.json")).body as { paths: Record<string, Record<string, unknown>> };
      documentGets = Object.entries(document.paths)
        .filter(([, operations]) => "get" in operations)
        .map(([path]) => path)
        .sort();
    });

    afterAll(async () => {
      if (fixture) await api.delete(`/webhooks/${fixture.webhookId}`, { key: staff });
    });

    it("classifies every GET operation of the served document", () => {
      expect(Object.keys(reads(fixture)).sort()).toEqual(documentGets);
    });

    it("public reads: shared-cache policy, Vary: Authorization and exact Cache-Tag", async () => {
      for (const [operation, { path, tags }] of Object.entries(reads(fixture))) {
        if (!tags) continue;
        const res = await api.get(path);
        expect(res.status, operation).toBe(200);
        expect(res.headers.get("cache-control"), operation).toBe(PUBLIC);
        expect(res.headers.get("vary") ?? "", operation).toMatch(/\bAuthorization\b/i);
        expect(tagsOf(res), operation).toEqual([...tags].sort());
      }
    });

    it("a list page tags every item it shows", async () => {
      const res = await api.get("/pets?limit=5");
      const ids = (res.body as { id: number }[]).map((pet) => `pet:${pet.id}`);
      expect(ids.length).toBeGreaterThan(0);
      expect(tagsOf(res)).toEqual(["pets", ...ids].sort());
    });

    it("the same public reads with a key are private: no-store and no Cache-Tag", async () => {
      for (const [operation, { path, tags }] of Object.entries(reads(fixture))) {
        if (!tags) continue;
        const res = await api.get(path, { key: staff });
        expect(res.status, operation).toBe(200);
        expect(res.headers.get("cache-control"), operation).toBe("private, no-store");
        expect(res.headers.get("cache-tag"), operation).toBeNull();
      }
    });

    it("private reads, meta routes and errors carry no Cache-Tag and are not publicly cacheable", async () => {
      for (const [operation, { path, tags }] of Object.entries(reads(fixture))) {
        if (tags) continue;
        const res = await api.get(path, { key: staff, unchecked: operation === "/docs" });
        expect(res.status, operation).toBe(200);
        expect(res.headers.get("cache-tag"), operation).toBeNull();
        expect(res.headers.get("cache-control") ?? "", operation).not.toMatch(/\bpublic\b/);
      }
      for (const path of [`/pets/${fixture.petId + 1_000_000}`, "/no-such-route", "/store/orders"]) {
        const res = await api.get(path);
        expect(res.status, path).toBeGreaterThanOrEqual(400);
        expect(res.headers.get("cache-control"), path).toMatch(/^(private, )?no-store$/);
        expect(res.headers.get("cache-tag"), path).toBeNull();
      }
    });
  });
}
