/**
 * `npm run seed`: fills the configured database with a realistic catalogue
 * built from the animal corpora in `scripts/corpora/` (CC0 word lists),
 * through the same service functions the API uses, idempotently.
 *
 * - Categories: the kinds of animal of `common.json` (`animals`), first letter
 *   upper-cased ("dog" → "Dog").
 * - Pets named from `dog_names.json`, spread round-robin over those categories
 *   and over the statuses (7 in 10 available, 2 pending, 1 sold).
 * - Breeds (`dogs.json`, `cats.json`, `horses.json`, `rabbits.json`, any other
 *   `<kinds>.json` list) become pets of their kind's category (Dog, Cat, ...).
 *
 * Idempotent: existing categories are found by name (case-insensitively, as
 * the API compares them) and existing pets by name + category, so a second run
 * creates nothing. Text is stored exactly as in the corpora (`&amp;`, `ã`, `š`),
 * only trimmed like the API trims names.
 *
 * Environment: the database variables of the server (DATABASE_URL, default
 * `file:.data/petstore.db`; DATABASE_AUTH_TOKEN; DATABASE_SYNC_URL; see
 * src/db/driver/open.ts), CORPORA_DIR (default `scripts/corpora`).
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { Database } from "../src/db/client";
import { nodeSettings } from "../src/config";
import { openDatabase } from "../src/db/driver/open";
import type { PetStatus } from "../src/domain/pets";
import { NewCategorySchema } from "../src/routes/categories/categories.schemas";
import { NewPetSchema } from "../src/routes/pets/pets.schemas";
import { createCategory, listCategories, nameKey, type Category } from "../src/services/categories.service";
import { createPets } from "../src/services/pet-creation";
import { listPets, type NewPet } from "../src/services/pets.service";

/** Default location of the corpora: `scripts/corpora`, a copy of the CC0 lists kept with the repository. */
export const DEFAULT_CORPORA_DIR = fileURLToPath(new URL("./corpora/", import.meta.url));

/** What one run did. */
export interface SeedReport {
  /** False when the corpora folder is absent (then nothing was done). */
  corporaFound: boolean;
  categories: { created: number; existing: number };
  pets: { created: number; existing: number };
}

/** Status of the i-th seeded pet: 7 in 10 available, 2 pending, 1 sold. */
function statusFor(i: number): PetStatus {
  const r = i % 10;
  return r < 7 ? "available" : r < 9 ? "pending" : "sold";
}

/** "gila monster" → "Gila monster". */
function categoryNameOf(kind: string): string {
  return kind.charAt(0).toUpperCase() + kind.slice(1);
}

function readList(file: string, key: string): string[] {
  const value = (JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>)[key];
  if (!Array.isArray(value) || !value.every((v) => typeof v === "string")) throw new Error(`${file}: "${key}" is not a list of strings`);
  return value;
}

/** Breed lists: every `<kinds>.json` holding one string array `<kinds>` (dogs.json → dogs → kind "dog"). */
function readBreedLists(corporaDir: string): { kind: string; breeds: string[] }[] {
  const lists: { kind: string; breeds: string[] }[] = [];
  for (const file of readdirSync(corporaDir).sort()) {
    const match = /^([a-z_]+)s\.json$/.exec(file);
    if (!match || file === "dog_names.json") continue;
    const key = `${match[1]}s`;
    const json = JSON.parse(readFileSync(join(corporaDir, file), "utf8")) as Record<string, unknown>;
    if (Array.isArray(json[key])) lists.push({ kind: match[1]!, breeds: readList(join(corporaDir, file), key) });
  }
  return lists;
}

const PAGE = 1000;
const PETS_PER_BATCH = 250;

/** Every category, through the service's paginated list. */
async function allCategories(db: Database): Promise<Category[]> {
  const out: Category[] = [];
  for (let after = 0; ; ) {
    const page = await listCategories(db, after, PAGE);
    out.push(...page);
    if (page.length < PAGE) return out;
    after = page[page.length - 1]!.id;
  }
}

/** Keys `categoryId name` of every pet, through the service's paginated list. */
async function allPetKeys(db: Database): Promise<Set<string>> {
  const keys = new Set<string>();
  for (let after = 0; ; ) {
    const page = await listPets(db, {}, after, PAGE);
    for (const pet of page) keys.add(`${pet.categoryId} ${pet.name}`);
    if (page.length < PAGE) return keys;
    after = page[page.length - 1]!.id;
  }
}

/**
 * Load the catalogue of `corporaDir` into `db` through the services, at time
 * `now` (event timestamps). Creates only what is missing; returns counts.
 * @throws Error when a corpora file is malformed.
 */
export async function seedCatalogue(db: Database, corporaDir: string, now: Date): Promise<SeedReport> {
  const report: SeedReport = { corporaFound: false, categories: { created: 0, existing: 0 }, pets: { created: 0, existing: 0 } };
  if (!existsSync(join(corporaDir, "common.json"))) return report;
  report.corporaFound = true;

  // Categories: the kinds of animal, plus any kind that has a breed list but no entry.
  const breedLists = readBreedLists(corporaDir);
  const kinds = readList(join(corporaDir, "common.json"), "animals");
  for (const { kind } of breedLists) if (!kinds.some((k) => nameKey(k) === nameKey(kind))) kinds.push(kind);

  const byKey = new Map((await allCategories(db)).map((c) => [nameKey(c.name), c]));
  const kindCategories: Category[] = [];
  for (const kind of kinds) {
    const input = NewCategorySchema.parse({ name: categoryNameOf(kind), description: `Animals of the kind "${kind}".` });
    let category = byKey.get(nameKey(input.name));
    if (category) {
      report.categories.existing += 1;
    } else {
      category = await createCategory(db, input, now);
      byKey.set(nameKey(category.name), category);
      report.categories.created += 1;
    }
    kindCategories.push(category);
  }

  // Pets: dog names round-robin over the kinds, then each breed in its kind's category.
  const wanted: NewPet[] = [];
  readList(join(corporaDir, "dog_names.json"), "dog_names").forEach((name, i) => {
    wanted.push({ name, categoryId: kindCategories[i % kindCategories.length]!.id, status: statusFor(i) });
  });
  for (const { kind, breeds } of breedLists) {
    const category = byKey.get(nameKey(categoryNameOf(kind)))!;
    for (const [i, name] of breeds.entries()) wanted.push({ name, categoryId: category.id, status: statusFor(i) });
  }

  const existing = await allPetKeys(db);
  const missing: NewPet[] = [];
  for (const raw of wanted) {
    const pet = NewPetSchema.parse(raw); // the API's own rules: trimmed, 1-100 characters
    const key = `${pet.categoryId} ${pet.name}`;
    if (existing.has(key)) {
      report.pets.existing += 1;
      continue;
    }
    existing.add(key); // a name listed twice for one category is created once
    missing.push(pet);
  }
  for (let i = 0; i < missing.length; i += PETS_PER_BATCH) {
    const created = await createPets(db, missing.slice(i, i + PETS_PER_BATCH), now);
    report.pets.created += created.filter((p) => p !== null).length;
  }
  return report;
}

/** CLI: seed DATABASE_URL from CORPORA_DIR and print what was done. */
async function main(): Promise<void> {
  const corporaDir = process.env.CORPORA_DIR || DEFAULT_CORPORA_DIR;
  if (!existsSync(join(corporaDir, "common.json"))) {
    console.log(`No corpora at ${corporaDir}: nothing to seed (set CORPORA_DIR to seed from elsewhere).`);
    return;
  }
  const started = Date.now();
  const opened = await openDatabase(nodeSettings(process.env).database);
  const { db } = opened;
  const url = opened.displayUrl;
  try {
    const report = await seedCatalogue(db, corporaDir, new Date());
    console.log(
      `Seeded ${url} from ${corporaDir} in ${Date.now() - started} ms: ` +
        `categories ${report.categories.created} created, ${report.categories.existing} existing; ` +
        `pets ${report.pets.created} created, ${report.pets.existing} existing.`,
    );
  } finally {
    await opened.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
