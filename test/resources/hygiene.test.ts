/**
 * Request hygiene (issue 3, docs/api.md#request-bodies-and-text,
 * #conventions, #authentication): 413 for bodies over 64 KiB, 415
 * for non-JSON bodies, CORS (preflight and exposed headers), security headers
 * (Hono secure-headers), and secrets: API keys are never logged nor stored in
 * plaintext (assertions on the real rows of every table, for sign-up, new
 * keys, operator keys and the bootstrap staff key).
 */
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { Database } from "../../src/db/client";
import { openTestDatabase } from "../support/database";
import { bootstrapStaffKey, createOperatorKey } from "../../src/services/accounts.service";
import { connect, type ApiClient } from "../support/client";
import { nodeTarget, type NodeTarget } from "../support/node-target";
import { uniqueEmail, type NewApiKeyBody, type SignUpBody } from "../scenarios/accounts.scenarios";

const LIMIT = 64 * 1024;
const ORIGIN = "https://shop.example";

/** A JSON sign-up body of exactly `bytes` bytes (UTF-8). */
function signUpBodyOfSize(bytes: number): string {
  const base = JSON.stringify({ name: "", email: uniqueEmail("big") });
  return JSON.stringify({ name: "x".repeat(bytes - base.length), email: JSON.parse(base).email });
}

/**
 * Every cell of every table that contains `secret` (or its random part), as
 * `table.column` strings; plus checks of the api_keys row that holds its hash.
 */
async function cellsContaining(db: Database, secret: string): Promise<string[]> {
  const tables = await db.execute("SELECT name FROM sqlite_master WHERE type = 'table'");
  const found: string[] = [];
  for (const { name } of tables.rows) {
    const rs = await db.execute(`SELECT * FROM "${String(name)}"`);
    for (const row of rs.rows) {
      for (const column of rs.columns) {
        const value = row[column];
        const text = value instanceof ArrayBuffer ? Buffer.from(value).toString("latin1") : String(value);
        if (text.includes(secret) || text.includes(secret.slice("psk_".length))) found.push(`${String(name)}.${column}`);
      }
    }
  }
  return found;
}

/** Assert the database holds no plaintext of `secret`: only its SHA-256 and a short display prefix. */
async function expectStoredAsHashOnly(db: Database, secret: string): Promise<void> {
  expect(await cellsContaining(db, secret), "cells holding the secret").toEqual([]);
  const hash = createHash("sha256").update(secret, "utf8").digest("hex");
  const rs = await db.execute({ sql: "SELECT * FROM api_keys WHERE secret_hash = ?", args: [hash] });
  expect(rs.rows).toHaveLength(1);
  const row = rs.rows[0]!;
  expect(row.prefix).toBe(secret.slice(0, 10));
  expect(String(row.prefix).length).toBeLessThanOrEqual(10);
}

describe("request hygiene", () => {
  let target: NodeTarget;
  let api: ApiClient;
  beforeAll(async () => {
    target = await nodeTarget();
    api = await connect(target);
  });
  afterAll(async () => {
    await target?.close();
  });

  describe("413 payload_too_large", () => {
    it("refuses a body over 64 KiB on a public and on a staff route, and accepts exactly 64 KiB", async () => {
      const over = signUpBodyOfSize(LIMIT + 1);
      expect(Buffer.byteLength(over)).toBe(LIMIT + 1);
      const res = await api.post("/accounts", undefined, { rawBody: over, headers: { "Content-Type": "application/json" } });
      expect(res.status).toBe(413);
      expect(res.body.code).toBe("payload_too_large");

      const pets = await api.post("/pets", undefined, { rawBody: over, key: target.staffKey, headers: { "Content-Type": "application/json" } });
      expect(pets.status).toBe(413);
      expect(pets.body.code).toBe("payload_too_large");

      const exact = signUpBodyOfSize(LIMIT);
      expect(Buffer.byteLength(exact)).toBe(LIMIT);
      const atLimit = await api.post("/accounts", undefined, { rawBody: exact, headers: { "Content-Type": "application/json" } });
      expect(atLimit.status, "64 KiB is allowed; the name is then too long").toBe(400);
      expect(atLimit.body.code).toBe("validation_error");
    });

    it("refuses a streamed body without Content-Length once it passes 64 KiB", async () => {
      const bytes = new TextEncoder().encode(signUpBodyOfSize(LIMIT + 1000));
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          for (let i = 0; i < bytes.length; i += 8192) controller.enqueue(bytes.slice(i, i + 8192));
          controller.close();
        },
      });
      const res = await target.fetch("/accounts", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: stream,
        duplex: "half",
      } as RequestInit);
      expect(res.status).toBe(413);
      expect(((await res.json()) as { code: string }).code).toBe("payload_too_large");
    });
  });

  describe("415 unsupported_media_type", () => {
    it("refuses a JSON-looking body that is not sent as application/json", async () => {
      const body = JSON.stringify({ name: "Plain", email: uniqueEmail() });
      for (const type of ["text/plain", "application/x-www-form-urlencoded", "application/xml", "multipart/form-data; boundary=x"]) {
        const res = await api.post("/accounts", undefined, { rawBody: body, headers: { "Content-Type": type } });
        expect(res.status, type).toBe(415);
        expect(res.body.code).toBe("unsupported_media_type");
      }
      const staff = await api.post("/categories", undefined, {
        rawBody: JSON.stringify({ name: "Plain" }),
        key: target.staffKey,
        headers: { "Content-Type": "text/plain" },
      });
      expect(staff.status).toBe(415);
      const optionalBody = await api.post("/accounts/me/keys", undefined, {
        rawBody: '{"name":"x"}',
        key: target.staffKey,
        headers: { "Content-Type": "text/plain" },
      });
      expect(optionalBody.status, "a route whose body is optional still refuses a non-JSON one").toBe(415);
    });

    it("refuses a body with no Content-Type at all", async () => {
      const res = await target.fetch("/accounts", { method: "POST", body: new TextEncoder().encode(JSON.stringify({ name: "None", email: uniqueEmail() })) });
      expect(res.status).toBe(415);
      expect(((await res.json()) as { code: string }).code).toBe("unsupported_media_type");
    });

    it("accepts application/json with a charset parameter", async () => {
      const res = await api.post<SignUpBody>("/accounts", undefined, {
        rawBody: JSON.stringify({ name: "Charset", email: uniqueEmail() }),
        headers: { "Content-Type": "application/json; charset=utf-8" },
      });
      expect(res.status).toBe(201);
    });
  });

  describe("CORS", () => {
    it("allows a preflight for an authenticated, conditional, idempotent write from any origin", async () => {
      for (const [path, method] of [
        ["/pets/1", "PATCH"],
        ["/store/orders", "POST"],
        ["/accounts/me/keys/1", "DELETE"],
      ] as const) {
        const res = await target.fetch(path, {
          method: "OPTIONS",
          headers: {
            Origin: ORIGIN,
            "Access-Control-Request-Method": method,
            "Access-Control-Request-Headers": "authorization, content-type, idempotency-key, if-match",
          },
        });
        expect(res.status, `${method} ${path}`).toBeLessThan(300);
        expect(res.headers.get("access-control-allow-origin")).toBe("*");
        const methods = (res.headers.get("access-control-allow-methods") ?? "").split(",").map((m) => m.trim());
        expect(methods).toContain(method);
        const allowed = (res.headers.get("access-control-allow-headers") ?? "")
          .toLowerCase()
          .split(",")
          .map((h) => h.trim());
        for (const header of ["authorization", "content-type", "idempotency-key", "if-match", "if-none-match"]) expect(allowed).toContain(header);
        expect(res.headers.get("www-authenticate"), "a preflight needs no key").toBeNull();
      }
    });

    it("lets any origin read public GETs and exposes the headers clients need", async () => {
      const res = await api.get("/pets", { headers: { Origin: ORIGIN } });
      expect(res.status).toBe(200);
      expect(res.headers.get("access-control-allow-origin")).toBe("*");
      const exposed = (res.headers.get("access-control-expose-headers") ?? "")
        .toLowerCase()
        .split(",")
        .map((h) => h.trim());
      for (const header of [
        "etag",
        "link",
        "location",
        "ratelimit-limit",
        "ratelimit-remaining",
        "ratelimit-reset",
        "retry-after",
        "deprecation",
        "sunset",
        "x-request-id",
      ]) {
        expect(exposed).toContain(header);
      }
      // Error responses are readable cross-origin too (so a browser client sees the Error object).
      const error = await api.get("/accounts/me", { headers: { Origin: ORIGIN } });
      expect(error.status).toBe(401);
      expect(error.headers.get("access-control-allow-origin")).toBe("*");
    });
  });

  describe("security headers", () => {
    it("are on successes, errors and the docs page", async () => {
      const responses = [
        await api.get("/pets"),
        await api.get("/no-such-route"),
        await api.get("/accounts/me"),
        await api.post("/accounts", undefined, { rawBody: "{", headers: { "Content-Type": "application/json" } }),
        await api.get("/docs"),
      ];
      for (const res of responses) {
        const where = `${res.status}`;
        expect(res.headers.get("x-content-type-options"), where).toBe("nosniff");
        expect(res.headers.get("x-frame-options"), where).toBe("SAMEORIGIN");
        expect(res.headers.get("referrer-policy"), where).toBe("no-referrer");
        expect(res.headers.get("strict-transport-security"), where).toMatch(/^max-age=\d+/);
        expect(res.headers.get("content-security-policy"), where).toContain("default-src 'self'");
        expect(res.headers.get("x-powered-by"), where).toBeNull();
        expect(res.headers.get("x-request-id"), where).toBeTruthy();
      }
    });
  });
});

describe("secrets: never logged, never stored", () => {
  let target: NodeTarget;
  let api: ApiClient;
  const logged: string[] = [];
  beforeAll(async () => {
    target = await nodeTarget({}, { log: (line) => logged.push(line) });
    api = await connect(target);
  });
  afterAll(async () => {
    await target?.close();
  });

  it("stores only the hash and display prefix of sign-up, new and operator keys", async () => {
    const signUp = await api.post<SignUpBody>("/accounts", { name: "Hash only", email: uniqueEmail("hash") });
    expect(signUp.status).toBe(201);
    const more = await api.post<NewApiKeyBody>("/accounts/me/keys", { name: "second" }, { key: signUp.body.apiKey.key });
    expect(more.status).toBe(201);
    const operator = await createOperatorKey(target.db, "staff", "ops", new Date());
    for (const secret of [signUp.body.apiKey.key, more.body.key, operator.apiKey.key, target.staffKey]) {
      await expectStoredAsHashOnly(target.db, secret);
    }
  });

  it("the bootstrap staff key is made once, on a database without staff, and stored as a hash only", async () => {
    const dir = mkdtempSync(join(tmpdir(), "petstore-bootstrap-"));
    const db = await openTestDatabase(`file:${join(dir, "boot.db")}`);
    try {
      const key = await bootstrapStaffKey(db, new Date());
      expect(key?.key).toMatch(/^psk_[A-Za-z0-9_-]{43}$/);
      expect(await bootstrapStaffKey(db, new Date()), "never a second time").toBeNull();
      await expectStoredAsHashOnly(db, key!.key);
      const accounts = await db.execute("SELECT role FROM accounts");
      expect(accounts.rows.map((r) => r.role)).toEqual(["staff"]);
    } finally {
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a failing request with a key logs no secret and answers no SQL or stack", async () => {
    const consoleLines: string[] = [];
    const spies = (["log", "error", "warn", "info", "debug"] as const).map((level) =>
      vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
        consoleLines.push(args.map(String).join(" "));
      }),
    );
    try {
      const { apiKey } = (await api.post<SignUpBody>("/accounts", { name: "Logs", email: uniqueEmail("logs") })).body;
      expect((await api.get("/accounts/me", { key: apiKey.key })).status).toBe(200); // now in the key cache
      const uncached = (await createOperatorKey(target.db, "customer", "uncached", new Date())).apiKey.key;

      // Break the database under the running app (a real failure, no mock): the key table is gone.
      await target.db.execute("ALTER TABLE api_keys RENAME TO api_keys_gone");
      try {
        const writes = await api.post("/accounts/me/keys", { name: "doomed" }, { key: apiKey.key });
        const verify = await api.get("/accounts/me", { key: uncached });
        for (const res of [writes, verify]) {
          expect(res.status, JSON.stringify(res.body)).toBe(500);
          expect(res.body.code).toBe("internal_error");
          expect(res.body.requestId).toBe(res.headers.get("x-request-id"));
          expect(JSON.stringify(res.body)).not.toMatch(/SQLITE|api_keys|SELECT|INSERT|UPDATE|\n\s+at /);
        }
      } finally {
        await target.db.execute("ALTER TABLE api_keys_gone RENAME TO api_keys");
      }
      expect(logged.length, "the 500s were reported to the log").toBeGreaterThanOrEqual(2);
      const everything = [...logged, ...consoleLines].join("\n");
      expect(everything).not.toMatch(/psk_[A-Za-z0-9_-]{43}/);
      for (const secret of [apiKey.key, uncached, target.staffKey]) expect(everything).not.toContain(secret.slice(4));
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
  });
});
