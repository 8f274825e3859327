/**
 * End-to-end scenarios of accounts and API keys (docs/api.md#authentication, issue 3): sign-up,
 * the key lifecycle (create, use, list without secrets, revoke at once),
 * duplicate emails, validation and ownership of keys, and the private cache
 * policy of caller-dependent responses. Written against the Target interface
 * so the Node and Worker suites share them; no database access here (the
 * "no plaintext key in the database" checks are Node-only, test/resources/hygiene.test.ts).
 */
import { beforeAll, describe, expect, it } from "vitest";
import { connect, uniqueName, type ApiClient, type ApiResponse } from "../support/client";
import type { Target } from "../support/target";

export interface AccountBody {
  id: number;
  name: string;
  email: string;
  role: "customer" | "staff";
  createdAt: string;
}

export interface ApiKeyBody {
  id: number;
  name: string | null;
  prefix: string;
  createdAt: string;
  lastUsedAt: string | null;
}

export interface NewApiKeyBody extends ApiKeyBody {
  key: string;
}

export interface SignUpBody {
  account: AccountBody;
  apiKey: NewApiKeyBody;
}

/** Shape of a secret key (docs/api.md#authentication): `psk_` + 32 random bytes in base64url. */
export const KEY_SHAPE = /^psk_[A-Za-z0-9_-]{43}$/;
/** `Cache-Control` of responses that depend on the caller (docs/api.md#caching). */
export const PRIVATE_CACHE_CONTROL = "private, no-store";

/** An email address no other test uses (mixed case on purpose). */
export function uniqueEmail(prefix = "user"): string {
  const local = uniqueName(prefix).replace(/[^A-Za-z0-9-]+/g, ".");
  return `${local}@Example.com`;
}

/** Sign up a fresh customer (asserting 201) and return the account with its first key. */
export async function signUp(api: ApiClient, body: { name?: string; email?: string } = {}): Promise<SignUpBody> {
  const res = await api.post<SignUpBody>("/accounts", { name: uniqueName("Customer"), email: uniqueEmail(), ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

/** Assert a 401 `unauthorized` with the RFC 6750 challenge of the `petstore` realm. */
export function expectUnauthorized(res: ApiResponse): void {
  expect(res.status, JSON.stringify(res.body)).toBe(401);
  expect(res.body.code).toBe("unauthorized");
  expect(res.headers.get("www-authenticate") ?? "").toMatch(/^Bearer realm="petstore"(, error="invalid_token")?$/);
}

/** Assert a 400 `validation_error` whose details name at least `paths`. */
function expectValidationError(res: ApiResponse, paths: string[]): void {
  expect(res.status, JSON.stringify(res.body)).toBe(400);
  expect(res.body.code).toBe("validation_error");
  const got = (res.body.details as { path: string }[]).map((d) => d.path);
  for (const path of paths) expect(got, JSON.stringify(res.body.details)).toContain(path);
}

export function accountsScenarios(getTarget: () => Target): void {
  describe("accounts and API keys", () => {
    let api: ApiClient;
    beforeAll(async () => {
      api = await connect(getTarget());
    });

    describe("POST /accounts (sign-up)", () => {
      it("creates a customer account and returns its first key once, privately", async () => {
        const email = uniqueEmail("ada");
        const res = await api.post<SignUpBody>("/accounts", { name: "  Ada Lovelace  ", email });
        expect(res.status, JSON.stringify(res.body)).toBe(201);
        const { account, apiKey } = res.body;
        expect(account).toEqual({ id: expect.any(Number), name: "Ada Lovelace", email, role: "customer", createdAt: expect.any(String) });
        expect(new Date(account.createdAt).toISOString()).toBe(account.createdAt);
        expect(apiKey.key).toMatch(KEY_SHAPE);
        expect(apiKey.prefix.length).toBeGreaterThan(4);
        expect(apiKey.key.startsWith(apiKey.prefix)).toBe(true);
        expect(apiKey.prefix.length, "the display prefix is not the secret").toBeLessThan(apiKey.key.length - 30);
        expect(apiKey.lastUsedAt).toBeNull();
        expect(res.headers.get("location")).toBe("/accounts/me");
        expect(res.headers.get("cache-control")).toBe(PRIVATE_CACHE_CONTROL);
      });

      it("gives every sign-up a different key", async () => {
        const a = await signUp(api);
        const b = await signUp(api);
        expect(a.apiKey.key).not.toBe(b.apiKey.key);
        expect(a.account.id).not.toBe(b.account.id);
      });

      it("rejects a second account with the same email, case-insensitively (409 duplicate_email)", async () => {
        const email = uniqueEmail("Grace");
        await signUp(api, { email });
        for (const variant of [email, email.toLowerCase(), email.toUpperCase()]) {
          const res = await api.post("/accounts", { name: "Grace", email: variant });
          expect(res.status, variant).toBe(409);
          expect(res.body.code).toBe("duplicate_email");
        }
      });

      it("validates the body strictly (400 validation_error naming each path)", async () => {
        expectValidationError(await api.post("/accounts", {}), ["body.name", "body.email"]);
        expectValidationError(await api.post("/accounts", { name: "X", email: "not-an-email" }), ["body.email"]);
        expectValidationError(await api.post("/accounts", { name: "   ", email: uniqueEmail() }), ["body.name"]);
        expectValidationError(await api.post("/accounts", { name: "x".repeat(101), email: uniqueEmail() }), ["body.name"]);
        expectValidationError(await api.post("/accounts", { name: 7, email: uniqueEmail() }), ["body.name"]);
        expectValidationError(await api.post("/accounts", [{ name: "X", email: uniqueEmail() }]), []);
      });

      it("never lets the caller choose a role or an id (strict body)", async () => {
        const res = await api.post("/accounts", { name: "Mallory", email: uniqueEmail("mallory"), role: "staff" });
        expectValidationError(res, ["body.role"]);
        expectValidationError(await api.post("/accounts", { name: "Mallory", email: uniqueEmail("mallory"), id: 1 }), ["body.id"]);
      });

      it("ignores a key on sign-up: even a staff key makes a customer", async () => {
        const res = await api.post<SignUpBody>("/accounts", { name: "Via staff", email: uniqueEmail() }, { key: getTarget().staffKey });
        expect(res.status).toBe(201);
        expect(res.body.account.role).toBe("customer");
      });
    });

    describe("GET /accounts/me", () => {
      it("returns the account of the key, privately", async () => {
        const { account, apiKey } = await signUp(api);
        const res = await api.get<AccountBody>("/accounts/me", { key: apiKey.key });
        expect(res.status).toBe(200);
        expect(res.body).toEqual(account);
        expect(res.headers.get("cache-control")).toBe(PRIVATE_CACHE_CONTROL);
      });

      it("tells staff keys apart", async () => {
        const res = await api.get<AccountBody>("/accounts/me", { key: getTarget().staffKey });
        expect(res.status).toBe(200);
        expect(res.body.role).toBe("staff");
      });

      it("is 401 without a key or with a bad key", async () => {
        expectUnauthorized(await api.get("/accounts/me"));
        expect((await api.get("/accounts/me")).headers.get("www-authenticate")).toBe('Bearer realm="petstore"');
        expectUnauthorized(await api.get("/accounts/me", { key: "psk_short" }));
        expectUnauthorized(await api.get("/accounts/me", { key: `psk_${"A".repeat(43)}` }));
      });
    });

    describe("key lifecycle", () => {
      it("sign-up → key works → second key → revoke first → first is 401 at once, second works", async () => {
        const { account, apiKey: first } = await signUp(api);
        expect((await api.get("/accounts/me", { key: first.key })).status).toBe(200);

        const created = await api.post<NewApiKeyBody>("/accounts/me/keys", { name: "laptop" }, { key: first.key });
        expect(created.status, JSON.stringify(created.body)).toBe(201);
        expect(created.headers.get("cache-control")).toBe(PRIVATE_CACHE_CONTROL);
        const second = created.body;
        expect(second).toMatchObject({ name: "laptop", lastUsedAt: null });
        expect(second.key).toMatch(KEY_SHAPE);
        expect(second.key).not.toBe(first.key);
        expect(second.id).not.toBe(first.id);

        const me = await api.get<AccountBody>("/accounts/me", { key: second.key });
        expect(me.status).toBe(200);
        expect(me.body.id).toBe(account.id);

        const revoked = await api.delete(`/accounts/me/keys/${first.id}`, { key: second.key });
        expect(revoked.status, JSON.stringify(revoked.body)).toBe(204);
        expect(revoked.body).toBeNull();

        expectUnauthorized(await api.get("/accounts/me", { key: first.key }));
        expectUnauthorized(await api.get("/accounts/me/keys", { key: first.key }));
        expect((await api.get("/accounts/me", { key: second.key })).status).toBe(200);

        const keys = await api.get<ApiKeyBody[]>("/accounts/me/keys", { key: second.key });
        expect(keys.body.map((k) => k.id)).toEqual([second.id]);
      });

      it("an account holds at most 100 active keys (409 key_limit_reached); the list is paginated with Link", async () => {
        const { apiKey: first } = await signUp(api);
        const created: NewApiKeyBody[] = [];
        for (let round = 0; round < 11; round++) {
          // 99 more keys (the sign-up made one), 9 at a time; the last round also tries 3 beyond the limit.
          const count = round < 10 ? 9 : 12;
          const results = await Promise.all(Array.from({ length: count }, () => api.post<NewApiKeyBody>("/accounts/me/keys", {}, { key: first.key })));
          for (const res of results) {
            if (res.status === 201) created.push(res.body);
            else expect(res.body).toMatchObject({ code: "key_limit_reached", status: 409, message: expect.stringContaining("100") });
          }
        }
        expect(created).toHaveLength(99);

        // Pages of 30 in id order, walked by the Link header; together every active key once.
        const seen: number[] = [];
        let path: string | undefined = "/accounts/me/keys?limit=30";
        while (path) {
          const page: ApiResponse<ApiKeyBody[]> = await api.get<ApiKeyBody[]>(path, { key: first.key });
          expect(page.status).toBe(200);
          expect(page.body.length).toBeLessThanOrEqual(30);
          seen.push(...page.body.map((k) => k.id));
          const link = page.headers.get("link");
          path = link ? /^<([^>]+)>; rel="next"$/.exec(link)![1] : undefined;
          expect(seen.length).toBeLessThanOrEqual(100);
        }
        expect(seen).toEqual([first.id, ...created.map((k) => k.id)].sort((a, b) => a - b));
        // Default page size 20.
        const firstPage = await api.get<ApiKeyBody[]>("/accounts/me/keys", { key: first.key });
        expect(firstPage.body).toHaveLength(20);
        expect(firstPage.headers.get("link")).toMatch(/^<\/accounts\/me\/keys\?cursor=[^>]+>; rel="next"$/);

        // Revoking one makes room for exactly one.
        expect((await api.delete(`/accounts/me/keys/${created[0]!.id}`, { key: first.key })).status).toBe(204);
        expect((await api.post("/accounts/me/keys", {}, { key: first.key })).status).toBe(201);
        expect((await api.post("/accounts/me/keys", {}, { key: first.key })).status).toBe(409);
      });

      it("lists the caller's active keys without any secret", async () => {
        const { apiKey: first } = await signUp(api);
        const second = (await api.post<NewApiKeyBody>("/accounts/me/keys", {}, { key: first.key })).body;
        const third = (await api.post<NewApiKeyBody>("/accounts/me/keys", undefined, { key: first.key })).body;
        expect(third.key).toMatch(KEY_SHAPE);

        const raw = await getTarget().fetch("/accounts/me/keys", { headers: { Authorization: `Bearer ${second.key}` } });
        expect(raw.status).toBe(200);
        expect(raw.headers.get("cache-control")).toBe(PRIVATE_CACHE_CONTROL);
        const text = await raw.text();
        for (const secret of [first.key, second.key, third.key]) {
          expect(text).not.toContain(secret);
          expect(text).not.toContain(secret.slice(4));
        }
        const keys = JSON.parse(text) as ApiKeyBody[];
        expect(keys.map((k) => k.id)).toEqual([first.id, second.id, third.id]);
        for (const k of keys) {
          expect(Object.keys(k).sort()).toEqual(["createdAt", "id", "lastUsedAt", "name", "prefix"]);
        }
        expect(keys.map((k) => k.prefix)).toEqual([first.prefix, second.prefix, third.prefix]);
        // The keys that authenticated a request show when; the unused one does not.
        expect(keys[0]!.lastUsedAt).toEqual(expect.any(String));
        expect(keys[1]!.lastUsedAt).toEqual(expect.any(String));
        expect(keys[2]!.lastUsedAt).toBeNull();
        // The validated list endpoint agrees.
        expect((await api.get("/accounts/me/keys", { key: second.key })).status).toBe(200);
      });

      it("a key may revoke itself; it stops working at once", async () => {
        const { apiKey } = await signUp(api);
        expect((await api.get("/accounts/me", { key: apiKey.key })).status).toBe(200);
        expect((await api.delete(`/accounts/me/keys/${apiKey.id}`, { key: apiKey.key })).status).toBe(204);
        expectUnauthorized(await api.get("/accounts/me", { key: apiKey.key }));
        expectUnauthorized(await api.post("/accounts/me/keys", {}, { key: apiKey.key }));
      });

      it("revoking someone else's key, a revoked key or an unknown key id is 404, and the other key keeps working", async () => {
        const alice = await signUp(api);
        const bob = await signUp(api);
        const res = await api.delete(`/accounts/me/keys/${bob.apiKey.id}`, { key: alice.apiKey.key });
        expect(res.status).toBe(404);
        expect(res.body.code).toBe("not_found");
        expect((await api.get("/accounts/me", { key: bob.apiKey.key })).status).toBe(200);
        // Staff cannot revoke a customer's key through /accounts/me either.
        expect((await api.delete(`/accounts/me/keys/${bob.apiKey.id}`, { key: getTarget().staffKey })).status).toBe(404);
        expect((await api.get("/accounts/me", { key: bob.apiKey.key })).status).toBe(200);

        const spare = (await api.post<NewApiKeyBody>("/accounts/me/keys", { name: "spare" }, { key: alice.apiKey.key })).body;
        expect((await api.delete(`/accounts/me/keys/${spare.id}`, { key: alice.apiKey.key })).status).toBe(204);
        expect((await api.delete(`/accounts/me/keys/${spare.id}`, { key: alice.apiKey.key })).status).toBe(404);
        expect((await api.delete(`/accounts/me/keys/${Number.MAX_SAFE_INTEGER}`, { key: alice.apiKey.key })).status).toBe(404);
      });

      it("validates key ids and key names", async () => {
        const { apiKey } = await signUp(api);
        for (const bad of ["abc", "0", "-1", "1.5", "99999999999999999999"]) {
          expectValidationError(await api.delete(`/accounts/me/keys/${bad}`, { key: apiKey.key }), ["path.keyId"]);
        }
        expectValidationError(await api.post("/accounts/me/keys", { name: "" }, { key: apiKey.key }), ["body.name"]);
        expectValidationError(await api.post("/accounts/me/keys", { name: "x".repeat(101) }, { key: apiKey.key }), ["body.name"]);
        expectValidationError(await api.post("/accounts/me/keys", { name: "ci", role: "staff" }, { key: apiKey.key }), ["body.role"]);
        // Nothing was created by the refused requests.
        const keys = await api.get<ApiKeyBody[]>("/accounts/me/keys", { key: apiKey.key });
        expect(keys.body).toHaveLength(1);
      });

      it("authenticates case-insensitively on the scheme only (RFC 6750 §2.1, RFC 9110 §11.1)", async () => {
        const { apiKey } = await signUp(api);
        const target = getTarget();
        const lower = await target.fetch("/accounts/me", { headers: { Authorization: `bearer ${apiKey.key}` } });
        expect(lower.status).toBe(200);
        await lower.arrayBuffer();
        const mangled = await target.fetch("/accounts/me", { headers: { Authorization: `Bearer ${apiKey.key.toUpperCase()}` } });
        expect(mangled.status).toBe(401);
        await mangled.arrayBuffer();
      });
    });
  });
}
