/** Handlers of /pets: parse (done by the route), call one service function, shape the response. */
import type { RouteHandler } from "@hono/zod-openapi";
import { petTag, PETS_LIST_TAG } from "../../http/cache-tags";
import { ifMatchPrecondition, withEtag } from "../../http/caching";
import type { AppEnv } from "../../http/context";
import { decodeCursor, DEFAULT_PAGE_SIZE, pageOf } from "../../http/pagination";
import { replayed } from "../../middleware/idempotency";
import type { Pet } from "../../services/pets.service";
import { createPetOnce } from "../../services/pet-creation";
import * as service from "../../services/pets.service";
import type * as routes from "./pets.routes";

export const list: RouteHandler<typeof routes.list, AppEnv> = async (c) => {
  const { status, categoryId, id, limit = DEFAULT_PAGE_SIZE, cursor } = c.req.valid("query");
  const rows = await service.listPets(c.get("db"), { status, categoryId, ids: id }, decodeCursor(cursor), limit + 1);
  const items = pageOf(c, rows, limit);
  return c.json(withEtag(c, items, [PETS_LIST_TAG, ...items.map((pet) => petTag(pet.id))]), 200);
};

export const create: RouteHandler<typeof routes.create, AppEnv> = async (c) => {
  const { created: pet, replay } = await createPetOnce(c.get("db"), c.req.valid("json"), c.get("now")(), c.get("keyClaim"));
  if (replay) return c.json(replayed<Pet>(c, replay), 201);
  c.header("Location", `/pets/${pet.id}`);
  return c.json(pet, 201);
};

export const get: RouteHandler<typeof routes.get, AppEnv> = async (c) => {
  const { petId } = c.req.valid("param");
  const pet = await service.getPet(c.get("db"), petId);
  return c.json(withEtag(c, pet, [petTag(pet.id)]), 200);
};

/** The handler of PUT (`replace`) or PATCH (`!replace`) /pets/{petId}. */
function updateHandler(replace: boolean): RouteHandler<typeof routes.replace | typeof routes.patch, AppEnv> {
  return async (c) => {
    const { petId } = c.req.valid("param");
    const expected = ifMatchPrecondition(c.req.valid("header")["if-match"]);
    const pet = await service.updatePet(c.get("db"), { petId, change: c.req.valid("json"), replace, expected, now: c.get("now")() });
    return c.json(withEtag(c, pet), 200);
  };
}

export const replace = updateHandler(true);
export const patch = updateHandler(false);

export const remove: RouteHandler<typeof routes.remove, AppEnv> = async (c) => {
  const { petId } = c.req.valid("param");
  await service.deletePet(c.get("db"), petId, ifMatchPrecondition(c.req.valid("header")["if-match"]), c.get("now")());
  return c.body(null, 204);
};
