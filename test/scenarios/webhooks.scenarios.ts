/**
 * End-to-end scenarios of /webhooks (docs/api.md#events-and-webhooks, experimental): subscriptions,
 * the secret shown once, validation of targets and event types, the delivery
 * log. Written against the Target interface so the Node and Worker suites
 * share them; deliveries to a real receiver are Node-only
 * (test/resources/webhook-delivery.test.ts).
 *
 * Subscriptions here target a loopback sink that answers 204 (a runtime that
 * dispatches in the background, like the Worker, delivers there quietly) and
 * are deleted after the file, so later files' events go nowhere; `.invalid`
 * hosts (RFC 6761 §6.4) appear only in bodies that are refused.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { uniqueName, type ApiClient, type ApiResponse } from "../support/client";
import type { Target } from "../support/target";
import { Receiver } from "../support/webhook-receiver";
import { api, key, openStaff } from "../support/cast";
import { expectUnauthorized, PRIVATE_CACHE_CONTROL, signUp } from "./accounts.scenarios";
import { expectValidationError } from "./categories.scenarios";

export interface WebhookBody {
  id: number;
  url: string;
  events: string[];
  enabled: boolean;
  status: "active" | "failing";
  createdAt: string;
}

export interface WebhookWithSecretBody extends WebhookBody {
  secret: string;
}

export interface DeliveryBody {
  webhookId: number;
  eventId: number;
  eventType: string;
  status: "pending" | "delivered" | "failed";
  attempts: number;
  nextAttemptAt?: string;
  lastAttemptAt?: string;
  lastStatusCode?: number;
  lastError?: "http_status" | "timeout" | "refused" | "dns" | "tls" | "private_address" | "network";
  deliveredAt?: string;
}

/** `whsec_` + base64 of 32 bytes (Standard Webhooks secret). */
export const SECRET_SHAPE = /^whsec_[A-Za-z0-9+/]{43}=$/;

let sink: Receiver | undefined;

/** A target URL on the loopback sink (unique per call); the sink runs while the webhooks scenarios do. */
export function sinkUrl(): string {
  if (!sink) throw new Error("the webhook sink is not running");
  return sink.url(`/${encodeURIComponent(uniqueName("hook").replace(/\s/g, "-"))}`);
}

/** Subscribe (asserting 201) and return the subscription with its secret. */
export async function subscribe(api: ApiClient, key: string, url: string, events: string[] = ["*"]): Promise<WebhookWithSecretBody> {
  const res = await api.post<WebhookWithSecretBody>("/webhooks", { url, events }, { key });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

export function webhooksScenarios(getTarget: () => Target): void {
  describe("webhooks", () => {
    openStaff(getTarget);

    beforeAll(async () => {
      sink = await Receiver.start();
    });
    afterAll(async () => {
      // Delete this file's subscriptions (the database may be shared with later files), then stop the sink.
      const origin = new URL(sinkUrl()).origin;
      for (let path: string | undefined = "/webhooks?limit=100"; path; ) {
        const page: ApiResponse<WebhookBody[]> = await api.get<WebhookBody[]>(path, { key });
        for (const hook of page.body.filter((h) => h.url.startsWith(origin))) await api.delete(`/webhooks/${hook.id}`, { key });
        path = /^<([^>]+)>; rel="next"$/.exec(page.headers.get("link") ?? "")?.[1];
      }
      await sink?.close();
      sink = undefined;
    });

    describe("POST /webhooks", () => {
      it("creates a subscription: 201, Location, the secret once, private", async () => {
        const url = sinkUrl();
        const res = await api.post<WebhookWithSecretBody>("/webhooks", { url, events: ["pet.created", "order.placed"] }, { key });
        expect(res.status).toBe(201);
        expect(res.headers.get("cache-control")).toBe(PRIVATE_CACHE_CONTROL);
        expect(res.body).toEqual({
          id: expect.any(Number),
          url,
          events: ["pet.created", "order.placed"],
          enabled: true,
          status: "active",
          createdAt: expect.any(String),
          ordering: "strict",
          maxInFlight: 10,
          secret: expect.stringMatching(SECRET_SHAPE),
        });
        expect(new Date(res.body.createdAt).toISOString()).toBe(res.body.createdAt);
        expect(res.headers.get("location")).toBe(`/webhooks/${res.body.id}`);

        const { secret, ...withoutSecret } = res.body;
        const got = await api.get<WebhookBody>(res.headers.get("location")!, { key });
        expect(got.status).toBe(200);
        expect(got.headers.get("cache-control")).toBe(PRIVATE_CACHE_CONTROL);
        expect(got.body).toEqual(withoutSecret);
        expect(JSON.stringify(got.body)).not.toContain(secret);

        const other = await subscribe(api, key, sinkUrl());
        expect(other.secret).not.toBe(secret);
      });

      it('accepts ["*"] (every type), drops duplicate types and normalises the URL', async () => {
        expect((await subscribe(api, key, sinkUrl(), ["*"])).events).toEqual(["*"]);
        expect((await subscribe(api, key, sinkUrl(), ["pet.created", "pet.created", "category.deleted"])).events).toEqual(["pet.created", "category.deleted"]);
        const { host } = new URL(sinkUrl());
        const res = await subscribe(api, key, `HTTP://${host}/a/../b?x=1`);
        expect(res.url).toBe(`http://${host}/b?x=1`);
      });

      it("rejects invalid bodies with 400 validation_error naming the field", async () => {
        const url = sinkUrl();
        const cases: [unknown, string][] = [
          [{ url: "ftp://hooks.petstore.invalid/x", events: ["*"] }, "body.url"],
          [{ url: "not a url", events: ["*"] }, "body.url"],
          [{ url: "/relative/path", events: ["*"] }, "body.url"],
          [{ url: "https://user:password@hooks.petstore.invalid/x", events: ["*"] }, "body.url"],
          [{ url: "", events: ["*"] }, "body.url"],
          [{ url: 5, events: ["*"] }, "body.url"],
          [{ events: ["*"] }, "body.url"],
          [{ url }, "body.events"],
          [{ url, events: [] }, "body.events"],
          [{ url, events: "pet.created" }, "body.events"],
          [{ url, events: ["pet.exploded"] }, "body.events.0"],
          [{ url, events: ["*", "pet.created"] }, "body.events"],
          [{ url, events: ["*"], secret: "whsec_mine" }, "body.secret"],
          [{ url, events: ["*"], id: 1 }, "body.id"],
        ];
        for (const [body, path] of cases) expectValidationError(await api.post("/webhooks", body, { key }), [path]);
      });

      it("needs a staff key: 401 without a key, 403 with a customer key", async () => {
        const body = { url: sinkUrl(), events: ["*"] };
        expectUnauthorized(await api.post("/webhooks", body));
        const customer = await signUp(api);
        const res = await api.post("/webhooks", body, { key: customer.apiKey.key });
        expect(res.status).toBe(403);
        expect((await api.get("/webhooks", { key: customer.apiKey.key })).status).toBe(403);
      });
    });

    /** Every item of a paginated list, following `Link: rel="next"` with the staff key. */
    async function walk<T>(firstPath: string, limit: number): Promise<T[]> {
      const items: T[] = [];
      let path: string | undefined = firstPath;
      while (path) {
        const res: ApiResponse<T[]> = await api.get<T[]>(path, { key });
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        expect(res.headers.get("cache-control")).toBe(PRIVATE_CACHE_CONTROL);
        expect(res.body.length).toBeLessThanOrEqual(limit);
        items.push(...res.body);
        const link = res.headers.get("link");
        path = link ? /^<([^>]+)>; rel="next"$/.exec(link)![1] : undefined;
      }
      return items;
    }

    describe("GET /webhooks", () => {
      it("lists subscriptions in id order without secrets, paginated", async () => {
        const created: WebhookWithSecretBody[] = [];
        for (let i = 0; i < 3; i++) created.push(await subscribe(api, key, sinkUrl()));
        const all = await walk<WebhookBody>("/webhooks?limit=2", 2);
        const ids = all.map((w) => w.id);
        expect(ids).toEqual([...ids].sort((a, b) => a - b));
        for (const { secret, ...listed } of created) {
          expect(all).toContainEqual(listed);
          expect(JSON.stringify(all)).not.toContain(secret);
        }
        expectValidationError(await api.get("/webhooks?limit=0", { key }), ["query.limit"]);
        expectValidationError(await api.get("/webhooks?cursor=nope", { key }), ["query.cursor"]);
        expectValidationError(await api.get("/webhooks?status=active", { key }), ["query.status"]);
      });
    });

    describe("GET/DELETE /webhooks/{webhookId}", () => {
      it("deletes a subscription: 204, then 404 for it and its deliveries", async () => {
        const hook = await subscribe(api, key, sinkUrl());
        expect((await api.delete(`/webhooks/${hook.id}`, { key })).status).toBe(204);
        for (const res of [
          await api.get(`/webhooks/${hook.id}`, { key }),
          await api.delete(`/webhooks/${hook.id}`, { key }),
          await api.get(`/webhooks/${hook.id}/deliveries`, { key }),
        ]) {
          expect(res.status).toBe(404);
          expect(res.body.code).toBe("not_found");
        }
        const listed = await walk<WebhookBody>("/webhooks?limit=100", 100);
        expect(listed.map((w) => w.id)).not.toContain(hook.id);
      });

      it("rejects malformed ids with 400 and unknown query parameters", async () => {
        for (const id of ["abc", "0", "-1", "1.5", "99999999999999999999"]) {
          expectValidationError(await api.get(`/webhooks/${id}`, { key }), ["path.webhookId"]);
        }
        const hook = await subscribe(api, key, sinkUrl());
        expectValidationError(await api.get(`/webhooks/${hook.id}?verbose=1`, { key }), ["query.verbose"]);
      });
    });

    describe("GET /webhooks/{webhookId}/deliveries", () => {
      it("starts empty: a subscription receives only events committed after it", async () => {
        const hook = await subscribe(api, key, sinkUrl());
        const res = await api.get<DeliveryBody[]>(`/webhooks/${hook.id}/deliveries`, { key });
        expect(res.status).toBe(200);
        expect(res.headers.get("cache-control")).toBe(PRIVATE_CACHE_CONTROL);
        expect(res.body).toEqual([]);
        expect((await api.get(`/webhooks/${hook.id}/deliveries?status=failed&limit=5`, { key })).status).toBe(200);
        expectValidationError(await api.get(`/webhooks/${hook.id}/deliveries?status=lost`, { key }), ["query.status"]);
      });
    });
  });
}
