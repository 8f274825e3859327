/**
 * The "engine:" rows of `npm run bench` (statement reuse): the statements of
 * one real order placement, recorded from `placeOrder` on a temp database
 * file (WAL, synchronous = FULL), run 50 orders per transaction (what group
 * commit sends) in one process, three ways:
 * - through `@libsql/client`, which compiles every statement on every call;
 * - through the app's driver for files (src/db/driver/open.ts: the native
 *   file driver under group commit), which compiles each SQL text once;
 * - through libsql-js (`libsql`, the engine under both) directly, each
 *   statement prepared once: the floor.
 * No HTTP, no app. Returns orders/s of each; ratios are within the run.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient, type InStatement, type InValue } from "@libsql/client";
import Libsql from "libsql";
import type { Database } from "../src/db/client";
import { nodeSettings } from "../src/config";
import { openDatabase } from "../src/db/driver/open";
import { createCategory } from "../src/services/categories.service";
import { setInventory } from "../src/services/inventory.service";
import { placeOrder } from "../src/services/orders/place";
import { createPet } from "../src/services/pet-creation";

const ORDERS_PER_TRANSACTION = 50;
const TRANSACTIONS = 80;

export interface EngineResult {
  /** Orders/s through @libsql/client, 50 per `batch(…, "write")`. */
  client: number;
  /** Orders/s through the app's driver (openDatabase on a file), 50 per `batch(…, "write")`. */
  app: number;
  /** Orders/s through libsql-js, statements prepared once, 50 per transaction. */
  preparedOnce: number;
  statementsPerOrder: number;
}

const TOKEN = /^[0-9a-f]{32}$/;

/** Measure both ways (about 5 s on the development machine). */
export async function measureEngine(): Promise<EngineResult> {
  const dir = mkdtempSync(join(tmpdir(), "petstore-bench-engine-"));
  const path = join(dir, "engine.db");
  try {
    const opened = await openDatabase(nodeSettings({ DATABASE_URL: `file:${path}` }).database);
    const { db } = opened;
    const now = new Date();
    const category = await createCategory(db, { name: "Engine" }, now);
    const pet = await createPet(db, { name: "Engine", categoryId: category.id }, now);
    await setInventory(db, { petId: pet.id, quantity: 10_000_000, now });
    const account = (
      await db.execute({
        sql: "INSERT INTO accounts (name, email, email_key, role, created_at) VALUES ('Engine', 'engine@example.com', 'engine@example.com', 'customer', ?) RETURNING id",
        args: [now.toISOString()],
      })
    ).rows[0]!;
    // Record the statements of one placement as the app sends them.
    let recorded: { sql: string; args: InValue[] }[] = [];
    const recorder: Database = {
      execute: (statement) => db.execute(statement),
      batch(statements, mode) {
        recorded = statements.map((s) => (typeof s === "string" ? { sql: s, args: [] } : { sql: s.sql, args: [...(s.args as InValue[])] }));
        return db.batch(statements, mode);
      },
    };
    await placeOrder(recorder, { principal: { role: "customer", accountId: Number(account.id), apiKeyId: 0 }, input: { petId: pet.id, quantity: 1 }, now });
    // Each order gets its own placement token (the one random argument).
    let serial = 0;
    const order = () => {
      const token = (serial++).toString(16).padStart(32, "0");
      return recorded.map((s) => ({ sql: s.sql, args: s.args.map((a) => (typeof a === "string" && TOKEN.test(a) ? token : a)) }));
    };

    const ordersPerSecond = async (send: (statements: InStatement[]) => Promise<unknown>) => {
      const started = performance.now();
      for (let t = 0; t < TRANSACTIONS; t++) await send(Array.from({ length: ORDERS_PER_TRANSACTION }, order).flat());
      return (ORDERS_PER_TRANSACTION * TRANSACTIONS) / ((performance.now() - started) / 1000);
    };
    const viaApp = await ordersPerSecond((statements) => db.batch(statements, "write"));
    await opened.close();

    const libsqlClient = createClient({ url: `file:${path}`, concurrency: 1 });
    for (const sql of ["PRAGMA journal_mode = WAL", "PRAGMA synchronous = FULL", "PRAGMA foreign_keys = ON"]) await libsqlClient.execute(sql);
    const viaClient = await ordersPerSecond((statements) => libsqlClient.batch(statements, "write"));
    libsqlClient.close();

    const native = new Libsql(path);
    native.pragma("journal_mode = WAL");
    native.pragma("synchronous = FULL");
    native.pragma("foreign_keys = ON");
    const prepared = new Map<string, ReturnType<typeof native.prepare>>();
    const statement = (sql: string) => {
      const cached = prepared.get(sql) ?? native.prepare(sql);
      prepared.set(sql, cached);
      return cached;
    };
    const started = performance.now();
    for (let t = 0; t < TRANSACTIONS; t++) {
      native.exec("BEGIN IMMEDIATE");
      for (let o = 0; o < ORDERS_PER_TRANSACTION; o++) {
        for (const { sql, args } of order()) {
          const s = statement(sql);
          if (s.reader) s.all(args);
          else s.run(args);
        }
      }
      native.exec("COMMIT");
    }
    const viaPrepared = (ORDERS_PER_TRANSACTION * TRANSACTIONS) / ((performance.now() - started) / 1000);
    native.close();
    return { client: Math.round(viaClient), app: Math.round(viaApp), preparedOnce: Math.round(viaPrepared), statementsPerOrder: recorded.length };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
