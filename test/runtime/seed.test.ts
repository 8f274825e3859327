/**
 * The seed (`npm run seed`, scripts/seed.ts): loads the corpora catalogue
 * through the services, idempotently, and the text comes back over HTTP byte
 * for byte. The corpora are the repository's copy (scripts/corpora).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CORPORA_DIR, seedCatalogue, type SeedReport } from "../../scripts/seed";
import { connect, type ApiClient } from "../support/client";
import { nodeTarget, type NodeTarget } from "../support/node-target";
import { walkPages, type CategoryBody } from "../scenarios/categories.scenarios";
import type { PetBody } from "../scenarios/pets.scenarios";

const list = (file: string, key: string): string[] => JSON.parse(readFileSync(join(DEFAULT_CORPORA_DIR, file), "utf8"))[key];

describe("seedCatalogue", () => {
  const now = new Date("2026-01-02T03:04:05.000Z");
  let target: NodeTarget;
  let api: ApiClient;
  let first: SeedReport;
  let categories: CategoryBody[];

  beforeAll(async () => {
    target = await nodeTarget();
    first = await seedCatalogue(target.db, DEFAULT_CORPORA_DIR, now);
    api = await connect(target);
    categories = (await walkPages<CategoryBody>(api, "/categories?limit=100", 100)).flat();
  });
  afterAll(async () => {
    await target?.close();
  });

  const count = async (table: string) => Number((await target.db.execute(`SELECT count(*) AS n FROM ${table}`)).rows[0]!.n);
  const petsOf = async (name: string) => {
    const category = categories.find((c) => c.name === name)!;
    expect(category, name).toBeDefined();
    return (await walkPages<PetBody>(api, `/pets?categoryId=${category.id}&limit=100`, 100)).flat();
  };

  it("creates a category per kind of animal and pets from the names and breeds", async () => {
    const kinds = list("common.json", "animals");
    const breeds = ["dogs", "cats", "horses", "rabbits"].reduce((n, k) => n + list(`${k}.json`, k).length, 0);
    expect(first.corporaFound).toBe(true);
    expect(first.categories).toEqual({ created: kinds.length, existing: 0 });
    expect(first.pets.existing).toBe(0);
    expect(first.pets.created).toBe(list("dog_names.json", "dog_names").length + breeds);
    expect(categories.map((c) => c.name)).toEqual(expect.arrayContaining(["Dog", "Cat", "Horse", "Rabbit", "Gila monster"]));
    expect(await count("pets")).toBe(first.pets.created);
    expect(await count("inventory")).toBe(first.pets.created);
  });

  it("spreads pets over categories and statuses, mostly available", async () => {
    const byStatus = async (status: string) => (await walkPages<PetBody>(api, `/pets?status=${status}&limit=100`, 100)).flat().length;
    const [available, pending, sold] = [await byStatus("available"), await byStatus("pending"), await byStatus("sold")];
    expect(available + pending + sold).toBe(first.pets.created);
    expect(available).toBeGreaterThan(pending + sold);
    expect(pending).toBeGreaterThan(0);
    expect(sold).toBeGreaterThan(0);
    const categoriesWithPets = Number((await target.db.execute("SELECT count(DISTINCT category_id) AS n FROM pets")).rows[0]!.n);
    expect(categoriesWithPets).toBe(categories.length);
    // The inventory agrees with each status (docs/api.md#stock-and-ordering: sold ⇒ 0, else 1).
    const soldStock = (await walkPages<{ quantity: number }>(api, "/store/inventory?status=sold&limit=100", 100)).flat();
    expect(soldStock.every((i) => i.quantity === 0)).toBe(true);
  });

  it("round-trips the corpora text byte for byte over HTTP", async () => {
    const dogs = await petsOf("Dog");
    const names = new Set(dogs.map((p) => p.name));
    for (const breed of ["Cão da Serra de Aires", "English Toy Terrier (Black &amp; Tan)", "Anglo-Français de Petite Vénerie", "Alano Español"]) {
      expect(names.has(breed), breed).toBe(true);
      const pet = dogs.find((p) => p.name === breed)!;
      const raw = new Uint8Array(await (await target.fetch(`/pets?id=${pet.id}`)).arrayBuffer());
      expect(Buffer.from(raw).includes(Buffer.from(breed, "utf8")), breed).toBe(true);
    }
    for (const breed of list("dogs.json", "dogs")) expect(names.has(breed), breed).toBe(true);
    const horses = new Set((await petsOf("Horse")).map((p) => p.name));
    expect(horses.has("Međimurje Horse")).toBe(true);
    expect(horses.has("Belgian Warmblood")).toBe(true); // trimmed like the API trims names
    const cats = new Set((await petsOf("Cat")).map((p) => p.name));
    for (const breed of list("cats.json", "cats")) expect(cats.has(breed), breed).toBe(true);
  });

  it("is idempotent: a second run creates nothing", async () => {
    const before = { categories: await count("categories"), pets: await count("pets"), inventory: await count("inventory"), events: await count("events") };
    const second = await seedCatalogue(target.db, DEFAULT_CORPORA_DIR, new Date("2026-02-03T00:00:00Z"));
    expect(second).toEqual({
      corporaFound: true,
      categories: { created: 0, existing: first.categories.created },
      pets: { created: 0, existing: first.pets.created },
    });
    const after = { categories: await count("categories"), pets: await count("pets"), inventory: await count("inventory"), events: await count("events") };
    expect(after).toEqual(before);
  });

  it("leaves what staff changed alone and fills in only what is missing", async () => {
    const dogs = await petsOf("Dog");
    const removed = dogs.find((p) => p.name === "Affenpinscher")!;
    expect((await api.delete(`/pets/${removed.id}`, { key: target.staffKey })).status).toBe(204);
    const third = await seedCatalogue(target.db, DEFAULT_CORPORA_DIR, now);
    expect(third.pets.created).toBe(1);
    expect(third.categories.created).toBe(0);
    expect((await petsOf("Dog")).filter((p) => p.name === "Affenpinscher")).toHaveLength(1);
  });
});

describe("seedCatalogue without corpora", () => {
  it("does nothing and says so", async () => {
    const target = await nodeTarget();
    try {
      const report = await seedCatalogue(target.db, join(DEFAULT_CORPORA_DIR, "does-not-exist"), new Date());
      expect(report).toEqual({ corporaFound: false, categories: { created: 0, existing: 0 }, pets: { created: 0, existing: 0 } });
      expect(Number((await target.db.execute("SELECT count(*) AS n FROM pets")).rows[0]!.n)).toBe(0);
    } finally {
      await target.close();
    }
  });
});
