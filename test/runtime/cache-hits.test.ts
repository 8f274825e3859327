/**
 * Read-cache hits answered by the Node server before the app
 * (src/runtime/node/cache-hits.ts), on the real server process: the same
 * headers and body as a hit the app answers, the same per-address budget
 * (docs/api.md#rate-limits), a request line in the log, and a write seen at once.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, startServer, type ServerProcess } from "../support/server-process";

/** Anonymous requests allowed per minute in this file. */
const ANON_LIMIT = 8;

let dir: string;
let server: ServerProcess;
let staff: string;
let petId: number;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "petstore-cache-hits-"));
  server = await startServer({
    databaseUrl: `file:${join(dir, "db.sqlite")}`,
    env: { RATE_LIMIT_ANON_PER_MIN: String(ANON_LIMIT), RATE_LIMIT_KEY_PER_MIN: "1000", LOG_LEVEL: "info" },
  });
  staff = server.bootstrapKey!;
  const category = await call(server.url, "POST", "/categories", { name: "Hits" }, { key: staff });
  petId = (await call(server.url, "POST", "/pets", { name: "Before", categoryId: category.body.id }, { key: staff })).body.id;
});

afterAll(async () => {
  if (server && !server.exited()) await server.kill();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Headers that differ between any two answers. */
const PER_REQUEST = new Set(["x-request-id", "ratelimit-remaining", "date"]);
const stable = (headers: Headers) => [...headers].filter(([name]) => !PER_REQUEST.has(name));

describe("cache hits on the Node server", () => {
  it("answers a hit like the app does, spends the address's budget, logs it, and sees a write at once", async () => {
    const get = (headers: Record<string, string> = {}) => call(server.url, "GET", `/pets/${petId}`, undefined, { headers });
    const miss = await get();
    expect(miss.headers.get("x-cache")).toBe("MISS");

    const early = await get();
    // A request with its own X-Request-Id is answered by the app's middleware.
    const throughApp = await get({ "X-Request-Id": "from-the-client" });
    expect(early.headers.get("x-cache")).toBe("HIT");
    expect(throughApp.headers.get("x-cache")).toBe("HIT");
    expect(throughApp.headers.get("x-request-id")).toBe("from-the-client");
    expect(early.body).toEqual(miss.body);
    expect(stable(early.headers)).toEqual(stable(throughApp.headers));
    // …and those of the app's own answer that stored it, but for X-Cache.
    const uncached = (headers: Headers) => stable(headers).filter(([name]) => name !== "x-cache");
    expect(uncached(early.headers)).toEqual(uncached(miss.headers));
    expect(early.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);

    // A write through the server is seen by the next anonymous read.
    await call(server.url, "PATCH", `/pets/${petId}`, { name: "After" }, { key: staff });
    const fresh = await get();
    const freshHit = await get();
    expect([fresh.headers.get("x-cache"), freshHit.headers.get("x-cache")]).toEqual(["MISS", "HIT"]);
    expect([fresh.body.name, freshHit.body.name]).toEqual(["After", "After"]);

    // One budget for the address, whoever answers: then the minute's last requests and a refusal.
    const answered = [miss, early, throughApp, fresh, freshHit];
    // (The start-up's readiness check spent one before.)
    const remaining = answered.map((r) => Number(r.headers.get("ratelimit-remaining")));
    expect(remaining).toEqual([0, 1, 2, 3, 4].map((n) => ANON_LIMIT - 2 - n));
    for (let left = remaining.at(-1)!; left > 0; left--) expect((await get()).status).toBe(200);
    const refused = await get();
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ code: "rate_limited", status: 429 });
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);

    // The pino destination is flushed on exit.
    expect(await server.stop()).toBe(0);
    const lines = server
      .output()
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const logged = lines.find((line) => line.requestId === early.headers.get("x-request-id"));
    expect(logged).toMatchObject({
      level: "info",
      msg: "request",
      method: "GET",
      route: "/pets/:petId",
      status: 200,
      dbRoundTrips: 0,
      cache: "HIT",
      accountId: null,
    });
    expect(logged!.durationMs).toEqual(expect.any(Number));
  });
});
