/**
 * Text fields are Unicode text (docs/api.md#request-bodies-and-text, issue 11): a NUL (U+0000) or a lone
 * surrogate in any text field of a body, or in a query string, is 400
 * `validation_error` naming the field, on both runtimes; nothing is stored
 * (before: NUL truncated the stored text, a lone surrogate became 503 on the
 * Worker and U+FFFD on Node). Well-formed text, astral characters included,
 * still round-trips.
 */
import { describe, expect, it } from "vitest";
import { uniqueName } from "../support/client";
import type { Target } from "../support/target";
import { api, key, category, pet, openPet } from "../support/cast";
import { signUp } from "./accounts.scenarios";
import { createCategory, expectValidationError } from "./categories.scenarios";
import { createPet } from "./pets.scenarios";

/** The strings that are not Unicode text, by name. */
const NOT_TEXT: [string, string][] = [
  ["a NUL", "a\u0000b"],
  ["a trailing NUL", "Dogs\u0000"],
  ["a lone high surrogate", "\ud800x"],
  ["a lone low surrogate", "x\udc00"],
  ["a reversed pair", "\udc00\ud800"],
];

/** Register the text scenarios against the target `getTarget()` returns. */
export function textScenarios(getTarget: () => Target): void {
  describe("text fields are Unicode text", () => {
    openPet(getTarget);

    describe.each(NOT_TEXT)("%s", (_, bad) => {
      it("in every text field of every write → 400 validation_error naming the field, nothing stored", async () => {
        const writes: [string, string, unknown, string][] = [
          ["POST", "/pets", { name: bad, categoryId: category.id }, "body.name"],
          ["PUT", `/pets/${pet.id}`, { name: bad, categoryId: category.id }, "body.name"],
          ["PATCH", `/pets/${pet.id}`, { name: bad }, "body.name"],
          ["POST", "/categories", { name: bad }, "body.name"],
          ["POST", "/categories", { name: uniqueName("Category"), description: bad }, "body.description"],
          ["PATCH", `/categories/${category.id}`, { name: bad }, "body.name"],
          ["PATCH", `/categories/${category.id}`, { description: bad }, "body.description"],
          ["POST", "/accounts/me/keys", { name: bad }, "body.name"],
          ["POST", "/webhooks", { url: `http://127.0.0.1:9/${bad}`, events: ["*"] }, "body.url"],
        ];
        for (const [method, path, body, field] of writes) {
          const res = await api.request(method, path, body, { key });
          expectValidationError(res, [field]);
        }
        const account = await api.post("/accounts", { name: bad, email: `${uniqueName("text").toLowerCase()}@example.com` });
        expectValidationError(account, ["body.name"]);

        // Nothing changed.
        expect((await api.get(`/pets/${pet.id}`)).body).toEqual(pet);
        expect((await api.get(`/categories/${category.id}`)).body).toEqual(category);
        expect((await api.get(`/pets?categoryId=${category.id}&limit=100`)).body).toEqual([pet]);
      });
    });

    it.each(["/pets?cursor=a%00b", "/categories?cursor=%00", "/store/inventory?cursor=x%00"])(
      "a NUL in a query string: GET %s → 400 validation_error naming it",
      async (path) => {
        expectValidationError(await api.get(path), ["query.cursor"]);
      },
    );

    it('"Dogs" and "Dogs\\u0000x" are not two names: the second is refused, not stored as a duplicate', async () => {
      const name = uniqueName("Dogs");
      await createCategory(api, key, { name });
      expectValidationError(await api.post("/categories", { name: `${name}\u0000x` }, { key }), ["body.name"]);
      expect((await api.post("/categories", { name }, { key })).body.code).toBe("duplicate_name");
    });

    it("well-formed text round-trips: astral characters (surrogate pairs), accents, emoji", async () => {
      const name = `${uniqueName("Text")} 𝒫𝑒𝓉 é 🐕‍🦺`;
      const created = await createPet(api, key, category.id, { name });
      expect(created.name).toBe(name);
      expect((await api.get(`/pets/${created.id}`)).body.name).toBe(name);
      const account = await signUp(api, { name: `Ådå 🐈 ${uniqueName("x")}` });
      expect(account.account.name).toMatch(/^Ådå 🐈 /);
    });
  });
}
