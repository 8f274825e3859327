/**
 * The Worker's local sqld (scripts/sqld.ts `ONE_CONNECTION`: the Worker suite,
 * `npm run dev:worker`, the bench's `worker:` rows) under the Worker's access
 * pattern at its worst: 200 requests writing at once, each through its own
 * libSQL HTTP client (src/db/driver/remote.ts `openRemoteDatabase`, 429s retried),
 * each write one `batch(…, "write")` that updates a shared row and appends a
 * 2 KB row (so the WAL passes SQLite's auto-checkpoint many times).
 *
 * Asserts that every write commits (none answered SQLITE_BUSY or left
 * refused), that the counts are exact, and that commits never pause for
 * {@link STALL_MS}. With sqld's default of 128 SQLite connections, its write
 * queue wedged in most 30-second runs of this load (no commit ever again) and
 * answered SQLITE_BUSY before; see the comment in scripts/sqld.ts.
 * Runs alone (vitest project "node-alone"): it saturates both cores.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ONE_CONNECTION, startSqld, type SqldServer } from "../../scripts/sqld";
import { openRemoteDatabase } from "../../src/db/driver/remote";

const WRITERS = 200;
const WRITES_EACH = 50;
/** Longest pause between two commits that counts as progress, ms. */
const STALL_MS = 15_000;

describe("the local sqld under 200 concurrent writers", () => {
  let dir: string;
  let sqld: SqldServer;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "petstore-sqld-contention-"));
    sqld = await startSqld({ dataDir: join(dir, "sqld"), ...ONE_CONNECTION });
    const setup = openRemoteDatabase(sqld.url);
    await setup.batch(
      [
        "CREATE TABLE counter (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)",
        "INSERT INTO counter VALUES (1, 0)",
        "CREATE TABLE entries (id INTEGER PRIMARY KEY, writer INTEGER NOT NULL, body TEXT NOT NULL)",
      ],
      "write",
    );
    setup.close();
  });

  afterAll(async () => {
    await sqld?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it(`${WRITERS} writers × ${WRITES_EACH} write batches, each writer a new client per batch → all commit, counts exact, no stall`, async () => {
    const body = "x".repeat(2000);
    const errors: string[] = [];
    let committed = 0;
    let lastCommit = Date.now();
    let longestPause = 0;
    const watch = setInterval(() => {
      longestPause = Math.max(longestPause, Date.now() - lastCommit);
    }, 100);
    let stalled: () => void = () => undefined;
    const stall = new Promise<void>((resolve) => {
      stalled = resolve;
    });
    const watchdog = setInterval(() => {
      if (Date.now() - lastCommit > STALL_MS) stalled();
    }, 500);

    async function writer(id: number): Promise<void> {
      for (let i = 0; i < WRITES_EACH; i++) {
        const client = openRemoteDatabase(sqld.url);
        try {
          await client.batch(
            [
              { sql: "UPDATE counter SET n = n + 1 WHERE id = 1", args: [] },
              { sql: "INSERT INTO entries (writer, body) VALUES (?, ?)", args: [id, body] },
            ],
            "write",
          );
          committed += 1;
          lastCommit = Date.now();
        } catch (error) {
          errors.push(String(error).slice(0, 200));
        } finally {
          client.close();
        }
      }
    }

    const all = Promise.all(Array.from({ length: WRITERS }, (_, id) => writer(id)));
    await Promise.race([all, stall]);
    clearInterval(watch);
    clearInterval(watchdog);
    longestPause = Math.max(longestPause, Date.now() - lastCommit);

    expect(longestPause, `no commit for ${longestPause} ms after ${committed} commits (sqld stalled)`).toBeLessThan(STALL_MS);
    expect(errors.slice(0, 5)).toEqual([]);
    expect(committed).toBe(WRITERS * WRITES_EACH);
    const check = openRemoteDatabase(sqld.url);
    const rs = await check.execute("SELECT (SELECT n FROM counter) AS n, (SELECT count(*) FROM entries) AS rows");
    check.close();
    expect({ n: Number(rs.rows[0]!.n), rows: Number(rs.rows[0]!.rows) }).toEqual({ n: WRITERS * WRITES_EACH, rows: WRITERS * WRITES_EACH });
  }, 150_000);
});
