/**
 * `npx tsx scripts/bench-lock-wait.ts busy|timer`: the measurements behind
 * src/db/guarded-client.ts and the /health check (README "Running several
 * processes"), on a temp file seeded with the corpora catalogue:
 *
 * 1. cost of one `statSync` (the per-query file identity check), of
 *    `SELECT 1`, of `PRAGMA quick_check` and of `OpenedDatabase.check()`;
 * 2. while another connection holds the write lock for 2 s, one write and a
 *    read every 20 ms: `busy` = SQLite's busy_timeout on the writer and a
 *    separate read connection; `timer` = the GuardedClient wait. Prints when
 *    the write finished, how many reads were answered meanwhile and the
 *    worst event-loop delay. (The holder runs in this process too, so under
 *    `busy` it cannot even release the lock while the loop is blocked.)
 */
import { statSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@libsql/client";
import { databaseSettings, openDatabase } from "../src/db/driver/open";
import { DEFAULT_CORPORA_DIR, seedCatalogue } from "./seed";
const dir = mkdtempSync(join(tmpdir(), "wt14-measure-"));
const file = join(dir, "m.db");
const o = await openDatabase(databaseSettings({ DATABASE_URL: `file:${file}` }));
await seedCatalogue(o.db, DEFAULT_CORPORA_DIR, new Date());
// 1. stat per query
let t = process.hrtime.bigint();
for (let i = 0; i < 100000; i++) statSync(file);
console.log("statSync µs/call", Number(process.hrtime.bigint() - t) / 1e3 / 100000);
// 2. SELECT 1 vs quick_check vs health check
for (const [name, fn] of [
  ["SELECT 1", () => o.db.execute("SELECT 1")],
  ["PRAGMA quick_check", () => o.db.execute("PRAGMA quick_check")],
  ["check() (stat+access+SELECT 1)", () => o.check()],
] as const) {
  const n = name.startsWith("PRAGMA") ? 20 : 2000;
  t = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await fn();
  console.log(name, "µs/call", Math.round(Number(process.hrtime.bigint() - t) / 1e3 / n));
}
// 3. options for reads during a held lock, in one process (the driver is synchronous)
for (const variant of [process.argv[2] === "busy" ? "busy_timeout 2500 on the writer, separate read connection" : "timer wait (GuardedClient)"]) {
  const holder = createClient({ url: `file:${file}` });
  const tx = await holder.transaction("write");
  setTimeout(() => void tx.rollback(), 2000);
  let writer: { execute: (s: string) => Promise<unknown> };
  let reader: { execute: (s: string) => Promise<unknown> };
  if (variant.startsWith("busy")) {
    const w = createClient({ url: `file:${file}`, concurrency: 1, timeout: 2500 });
    writer = { execute: (s) => w.batch([s], "write") };
    reader = createClient({ url: `file:${file}`, concurrency: 1 });
  } else {
    writer = { execute: (s) => o.db.batch([s], "write") };
    reader = o.db;
  }
  const start = Date.now();
  const write = writer.execute("INSERT INTO events (type, occurred_at, data) VALUES ('m','m','{}')").then(
    () => Date.now() - start,
    (e) => String(e),
  );
  let maxRead = 0;
  let reads = 0;
  const readLoop = (async () => {
    while (Date.now() - start < 2500) {
      await new Promise((r) => setTimeout(r, 20));
      const r0 = Date.now();
      await reader.execute("SELECT count(*) FROM pets");
      maxRead = Math.max(maxRead, Date.now() - r0 + 0);
      reads++;
    }
  })();
  const lag: number[] = [];
  const probe = (async () => {
    while (Date.now() - start < 2500) {
      const p0 = Date.now();
      await new Promise((r) => setTimeout(r, 20));
      lag.push(Date.now() - p0 - 20);
    }
  })();
  console.log(variant, "→ write done after ms:", await write);
  await readLoop;
  await probe;
  console.log(`   reads during the 2.5 s: ${reads}; worst event-loop delay ${Math.max(...lag)} ms`);
  holder.close();
}
