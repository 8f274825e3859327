/**
 * The one opener of the scenario files (test/scenarios): what a scenario
 * works with, as live bindings that an opener fills before the tests of the
 * describe it is called in. A scenario imports the names it uses and calls one
 * opener at the top of its outermost describe:
 *
 *   import { api, store, alice, openStore } from "../support/cast";
 *   describe("store: orders and inventory", () => {
 *     openStore(getTarget);
 *     it("…", async () => { await store.order(alice, (await store.stocked(1)).id); });
 *   });
 *
 * Each opener sets every name (those it does not make to undefined), so a
 * describe never sees the cast of an earlier one in the same file.
 */
import { beforeAll } from "vitest";
import { type ApiClient, connect } from "./client";
import { Store } from "./store";
import type { Target } from "./target";
import { signUp } from "../scenarios/accounts.scenarios";
import { type CategoryBody, createCategory } from "../scenarios/categories.scenarios";
import { createPet, type PetBody } from "../scenarios/pets.scenarios";

/** A client of the target, every response checked against the served document. */
export let api: ApiClient;
/** The staff key (`staff` is the same key, as the store scenarios call it). */
export let key: string;
export let staff: string;
/** A fresh category (openCategory, openPets, openPet). */
export let category: CategoryBody;
/** A category id that no longer exists (openPets). */
export let missingCategoryId: number;
/** A pet in `category` (openPet). */
export let pet: PetBody;
/** `Store` on a fresh category, as staff (openStore). */
export let store: Store;
/** Two new customers' keys (openStore). */
export let alice: string;
export let bob: string;

interface Cast {
  api: ApiClient;
  key: string;
  staff: string;
  category: CategoryBody;
  missingCategoryId: number;
  pet: PetBody;
  store: Store;
  alice: string;
  bob: string;
}

/** Before the enclosing describe's tests: connect to `getTarget()`, make what `extra` makes, and set the whole cast. */
function open(getTarget: () => Target, extra: (api: ApiClient, key: string) => Promise<Partial<Cast>>): void {
  beforeAll(async () => {
    const target = getTarget();
    const client = await connect(target);
    const cast = { api: client, key: target.staffKey, staff: target.staffKey, ...(await extra(client, target.staffKey)) } as Cast;
    ({ api, key, staff, category, missingCategoryId, pet, store, alice, bob } = cast);
  });
}

/** `api` and the staff key. */
export function openStaff(getTarget: () => Target): void {
  open(getTarget, async () => ({}));
}

/** `api`, the staff key and a fresh `category`. */
export function openCategory(getTarget: () => Target): void {
  open(getTarget, async (api, key) => ({ category: await createCategory(api, key) }));
}

/** `api`, the staff key, a fresh `category` and `missingCategoryId` (a category created and deleted). */
export function openPets(getTarget: () => Target): void {
  open(getTarget, async (api, key) => {
    const category = await createCategory(api, key);
    const gone = await createCategory(api, key);
    await api.delete(`/categories/${gone.id}`, { key });
    return { category, missingCategoryId: gone.id };
  });
}

/** `api`, the staff key, a fresh `category` and one `pet` in it. */
export function openPet(getTarget: () => Target): void {
  open(getTarget, async (api, key) => {
    const category = await createCategory(api, key);
    return { category, pet: await createPet(api, key, category.id) };
  });
}

/** `api`, `staff` (the staff key), `store` on a fresh category, and two new customers, `alice` and `bob`. */
export function openStore(getTarget: () => Target): void {
  open(getTarget, async (api, staff) => {
    const store = new Store(api, staff, (await createCategory(api, staff)).id);
    const alice = (await signUp(api)).apiKey.key;
    const bob = (await signUp(api)).apiKey.key;
    return { store, alice, bob };
  });
}
