/**
 * What `npm run bench` asks of the server: the seeded data (the corpora
 * catalogue topped up to `--pets`, stock that never runs out, keys) and each
 * scenario's requests. The row names are the scenario names; docs cite them.
 */
import { nodeSettings } from "../src/config";
import { openDatabase } from "../src/db/driver/open";
import { createAccount, createOperatorKey } from "../src/services/accounts.service";
import { createCategory } from "../src/services/categories.service";
import { createPet } from "../src/services/pet-creation";
import { DEFAULT_CORPORA_DIR, seedCatalogue } from "../scripts/seed";
import type { Setup } from "./drive";

/** The seeded ids and keys the scenarios draw from. */
export interface Fixture {
  petIds: number[];
  staffKey: string;
  customerKeys: string[];
}

/** Limits raised so that no scenario is rate limited (variables of docs/api.md#rate-limits). */
export const UNLIMITED = {
  RATE_LIMIT_ANON_PER_MIN: "100000000",
  RATE_LIMIT_KEY_PER_MIN: "100000000",
  RATE_LIMIT_SIGNUP_PER_HOUR: "100000000",
};

/** Scenarios also run against the Node server on sqld (rows "sqld: …"). */
export const SQLD_SCENARIOS = ["GET /pets/{petId}", "GET /pets/{petId} (auth, not cached)", "POST /store/orders"];

/** The Worker rows (rows "worker: …"): a public read and an order, the hot read and write of the edge. */
export const WORKER_SCENARIOS = ["GET /pets/{petId}", "POST /store/orders"];

/**
 * Seed the database at `url`: the corpora catalogue, pets up to `petTarget`,
 * every pet available with stock of 1,000,000, a staff key and 20 customer keys.
 */
export async function seedFixture(url: string, petTarget: number): Promise<Fixture> {
  const opened = await openDatabase(nodeSettings({ DATABASE_URL: url }).database);
  const { db } = opened;
  const now = new Date();
  await seedCatalogue(db, DEFAULT_CORPORA_DIR, now);
  let count = Number((await db.execute("SELECT count(*) AS n FROM pets")).rows[0]!.n);
  if (count < petTarget) {
    const category = await createCategory(db, { name: "Bench" }, now);
    for (; count < petTarget; count++) await createPet(db, { name: `Bench pet ${count}`, categoryId: category.id }, now);
  }
  // Stock large enough that orders never run out during the run; every pet available.
  await db.execute("UPDATE inventory SET quantity = 1000000, version = version + 1");
  await db.execute("UPDATE pets SET status = 'available', version = version + 1");
  const petIds = (await db.execute("SELECT id FROM pets ORDER BY id")).rows.map((r) => Number(r.id));
  const staffKey = (await createOperatorKey(db, "staff", "bench", now)).apiKey.key;
  const customerKeys: string[] = [];
  for (let i = 0; i < 20; i++) customerKeys.push((await createAccount(db, { name: `Bench ${i}`, email: `bench${i}@example.com` }, "customer", now)).apiKey.key);
  await opened.close();
  return { petIds, staffKey, customerKeys };
}

const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)]!;
const auth = (key: string) => ({ authorization: `Bearer ${key}` });

/** The reads of the mix, each its own scenario too. */
function readScenarios(f: Fixture): Record<string, Setup> {
  return {
    "GET /pets/{petId}": (r) => ({ ...r, method: "GET", path: `/pets/${pick(f.petIds)}` }),
    "GET /pets?id=": (r) => ({ ...r, method: "GET", path: `/pets?id=${pick(f.petIds)}` }),
    "GET /pets?status=available&limit=20": (r) => ({ ...r, method: "GET", path: "/pets?status=available&limit=20" }),
    "GET /store/inventory": (r) => ({ ...r, method: "GET", path: "/store/inventory" }),
    "GET /store/orders (auth)": (r) => ({ ...r, method: "GET", path: "/store/orders?limit=20", headers: auth(pick(f.customerKeys)) }),
  };
}

/** Any read of the mix (warmed before the mix runs). */
export function mixReads(f: Fixture): Setup {
  const readList = Object.values(readScenarios(f));
  return (r) => pick(readList)(r);
}

/** Every Node scenario by row name, in the order they run. */
export function scenarios(f: Fixture): Record<string, Setup> {
  const json = { "content-type": "application/json" };
  const reads = readScenarios(f);
  const writes: Record<string, Setup> = {
    "POST /store/orders": (r) => ({
      ...r,
      method: "POST",
      path: "/store/orders",
      headers: { ...json, ...auth(pick(f.customerKeys)) },
      body: JSON.stringify({ petId: pick(f.petIds), quantity: 1 }),
    }),
    "PUT /store/inventory/{petId}": (r) => ({
      ...r,
      method: "PUT",
      path: `/store/inventory/${pick(f.petIds)}`,
      headers: { ...json, ...auth(f.staffKey) },
      body: JSON.stringify({ quantity: 500_000 + Math.floor(Math.random() * 500_000) }),
    }),
  };
  const anyRead = mixReads(f);
  const writeList = Object.values(writes);
  return {
    ...reads,
    // With a key: not served by the read cache (anonymous reads only), so the database is read every time. Not in the mix.
    "GET /pets/{petId} (auth, not cached)": (r) => ({ ...r, method: "GET", path: `/pets/${pick(f.petIds)}`, headers: auth(pick(f.customerKeys)) }),
    ...writes,
    "mixed 90% reads / 10% writes": (r) => (Math.random() < 0.9 ? anyRead(r) : pick(writeList)(r)),
  };
}

/** A bare GET of `/`: what the baseline and the constant floor answer. */
export const rootGet: Setup = (r) => ({ ...r, method: "GET", path: "/" });
