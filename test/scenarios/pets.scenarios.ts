/**
 * End-to-end scenarios of POST /pets (docs/api.md: #resources, #endpoints,
 * #request-bodies-and-text, #errors), and `createPet`, which every /pets
 * scenario uses (their opener is `openPets` of test/support/cast.ts). Written
 * against the Target interface so the Node and Worker suites share them. The
 * rest of /pets is beside it:
 * pet-reads (GET), pet-changes (PUT, PATCH, DELETE, If-Match) and pet-status
 * (status transitions against stock and orders).
 */
import { describe, expect, it } from "vitest";
import { uniqueName, type ApiClient } from "../support/client";
import type { Target } from "../support/target";
import { api, key, category, missingCategoryId, openPets } from "../support/cast";
import { expectValidationError } from "./categories.scenarios";

export type PetStatus = "available" | "pending" | "sold";

export interface PetBody {
  id: number;
  name: string;
  categoryId: number;
  status: PetStatus;
}

/** Create a pet (asserting 201) and return it. */
export async function createPet(api: ApiClient, key: string, categoryId: number, body: { name?: string; status?: PetStatus } = {}): Promise<PetBody> {
  const res = await api.post<PetBody>("/pets", { name: uniqueName("Pet"), categoryId, ...body }, { key });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

/** Names from the corpora and beyond that must come back exactly as sent. */
export const TRICKY_NAMES = [
  "Cão da Serra de Aires",
  "English Toy Terrier (Black &amp; Tan)",
  "Međimurje Horse",
  "Anglo-Français de Petite Vénerie",
  "Zoë 🐶🦴",
  "👩‍👩‍👧 family dog",
  "<script>alert(1)</script> & \"quotes\" 'single'",
  "日本犬 柴",
  "back\\slash / slash",
];

/** Index of `needle` in `haystack` (bytes), or -1. */
function indexOfBytes(haystack: Uint8Array, needle: Uint8Array): number {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

/** Register the POST /pets scenarios against the target `getTarget()` returns (called once per test file). */
export function petsScenarios(getTarget: () => Target): void {
  describe("pets", () => {
    openPets(getTarget);

    describe("POST /pets", () => {
      it("creates a pet: 201, Location, status defaults to available, inventory quantity 1", async () => {
        const name = uniqueName("Bella");
        const res = await api.post("/pets", { name, categoryId: category.id }, { key });
        expect(res.status).toBe(201);
        expect(res.body).toEqual({ id: expect.any(Number), name, categoryId: category.id, status: "available" });
        expect(res.headers.get("location")).toBe(`/pets/${res.body.id}`);
        expect((await api.get(res.headers.get("location")!)).body).toEqual(res.body);
        const inventory = await api.get(`/store/inventory/${res.body.id}`);
        expect(inventory.body).toEqual({ petId: res.body.id, quantity: 1, status: "available" });
      });

      it.each([
        ["available", 1],
        ["pending", 1],
        ["sold", 0],
      ] as const)("creates a %s pet with inventory quantity %i", async (status, quantity) => {
        const pet = await createPet(api, key, category.id, { status });
        expect(pet.status).toBe(status);
        expect((await api.get(`/store/inventory/${pet.id}`)).body).toEqual({ petId: pet.id, quantity, status });
      });

      it.each(TRICKY_NAMES)("stores %j byte for byte (read, list, replace)", async (name) => {
        const created = await api.post("/pets", { name, categoryId: category.id }, { key });
        expect(created.status).toBe(201);
        expect(created.body.name).toBe(name);
        const id = created.body.id as number;
        expect((await api.get(`/pets/${id}`)).body.name).toBe(name);
        expect((await api.get(`/pets?id=${id}`)).body).toEqual([created.body]);
        const replaced = await api.put(`/pets/${id}`, { name, categoryId: category.id }, { key });
        expect(replaced.body.name).toBe(name);
        // The raw body carries the UTF-8 bytes themselves: no HTML escaping, no \u escapes.
        if (!/["\\]/.test(name)) {
          const raw = new Uint8Array(await (await getTarget().fetch(`/pets?id=${id}`)).arrayBuffer());
          expect(indexOfBytes(raw, new TextEncoder().encode(name))).toBeGreaterThan(0);
        }
      });

      it("trims the name; accepts 100 characters", async () => {
        const name = uniqueName("Trim");
        expect((await api.post("/pets", { name: `\n  ${name}  `, categoryId: category.id }, { key })).body.name).toBe(name);
        const long = uniqueName("L").padEnd(100, "y");
        expect((await api.post("/pets", { name: long, categoryId: category.id }, { key })).body.name).toBe(long);
      });

      it("refers to an existing category: 422 category_not_found otherwise, and nothing is created", async () => {
        const name = uniqueName("Orphan");
        const res = await api.post("/pets", { name, categoryId: missingCategoryId }, { key });
        expect(res.status).toBe(422);
        expect(res.body.code).toBe("category_not_found");
        const tooBig = await api.post("/pets", { name, categoryId: 9007199254740991 }, { key });
        expect(tooBig.status).toBe(422);
        expect(tooBig.body.code).toBe("category_not_found");
      });

      it.each([
        ["missing fields", {}, ["body.name", "body.categoryId"]],
        ["an empty name", { name: "", categoryId: 1 }, ["body.name"]],
        ["a whitespace name", { name: " \t ", categoryId: 1 }, ["body.name"]],
        ["a 101-character name", { name: "n".repeat(101), categoryId: 1 }, ["body.name"]],
        ["a numeric name", { name: 5, categoryId: 1 }, ["body.name"]],
        ["a string categoryId", { name: "Rex", categoryId: "1" }, ["body.categoryId"]],
        ["a fractional categoryId", { name: "Rex", categoryId: 1.5 }, ["body.categoryId"]],
        ["a zero categoryId", { name: "Rex", categoryId: 0 }, ["body.categoryId"]],
        ["a negative categoryId", { name: "Rex", categoryId: -1 }, ["body.categoryId"]],
        ["a categoryId beyond 2^53-1", { name: "Rex", categoryId: 9007199254740992 }, ["body.categoryId"]],
        ["an unknown status", { name: "Rex", categoryId: 1, status: "lost" }, ["body.status"]],
        ["a null status", { name: "Rex", categoryId: 1, status: null }, ["body.status"]],
        ["an unknown field", { name: "Rex", categoryId: 1, colour: "brown" }, ["body.colour"]],
        ["the read-only id", { id: 12, name: "Rex", categoryId: 1 }, ["body.id"]],
        ["several problems at once", { id: 1, name: 1, categoryId: "x", tags: [] }, ["body.id", "body.name", "body.categoryId", "body.tags"]],
      ])("rejects %s: 400 validation_error naming each path", async (_label, body, paths) => {
        expectValidationError(await api.post("/pets", body, { key }), paths);
      });
    });
  });
}
