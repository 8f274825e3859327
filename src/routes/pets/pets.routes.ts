/** OpenAPI route definitions of /pets (docs/api.md#endpoints, Pets tag). */
import { z } from "@hono/zod-openapi";
import { errorResponses, idempotencyKeyHeaders, createdContent, ifMatchHeaders, readResponses, responseHeaders, updatedContent } from "../../http/schemas";
import { idListQuery, idParams, idQuery, jsonBody, paginationQuery, operations, optionalParam } from "../../http/schemas";
import { mergePatchBody } from "../../http/merge-patch";
import { protectedOperation, publicReadOperation } from "../../middleware/security";
import { NewPetSchema, PetPatchSchema, PetSchema, PetsSchema, PetStatusSchema } from "./pets.schemas";
import { deprecatedPetRead } from "./pets.deprecation";

const route = operations(["Pets"]);
const petIdParams = idParams("petId");
const ifMatchHeader = ifMatchHeaders("pet", "`GET /pets?id={petId}`, `GET /pets/{petId}` or the response of the last PUT/PATCH");

export const list = route({
  method: "get",
  path: "/pets",
  operationId: "listPets",
  summary: "List pets",
  description: 'Pets ordered by id, filtered by status, category or a batch of ids; paginated with `Link: rel="next"`.',
  ...publicReadOperation(),
  request: {
    query: z.strictObject({
      status: optionalParam(PetStatusSchema, "query", "status", "Only pets with this status."),
      categoryId: idQuery("categoryId", "Only pets of this category."),
      id: idListQuery("id", "Only these pets (repeatable, at most 100): batch lookup, successor of GET /pets/{petId}."),
      ...paginationQuery,
    }),
  },
  responses: { ...readResponses(PetsSchema, "A page of pets.", { Link: responseHeaders.Link }), ...errorResponses([400, 429, 500, 503]) },
});

export const create = route({
  method: "post",
  path: "/pets",
  operationId: "createPet",
  summary: "Create a pet",
  description: "Creates the pet and its inventory entry (quantity 1, or 0 when sold) in one transaction.",
  ...protectedOperation("staff"),
  request: { headers: idempotencyKeyHeaders, body: jsonBody(NewPetSchema, "The new pet.") },
  responses: {
    201: createdContent(PetSchema, "The created pet."),
    ...errorResponses([400, 401, 403, 413, 415, 429, 500, 503], {
      409: "A request with this Idempotency-Key is still in progress (`concurrent_update`).",
      422: "The category does not exist (`category_not_found`), or the Idempotency-Key was used with another body (`idempotency_key_reused`).",
    }),
  },
});

export const get = route({
  method: "get",
  path: "/pets/{petId}",
  operationId: "getPet",
  summary: "Get a pet (deprecated)",
  description:
    "Deprecated: use `GET /pets?id={petId}` (batch lookup). Responses carry `Deprecation` (RFC 9745), `Sunset` (RFC 8594) and a `successor-version` Link; after the sunset date the endpoint answers 410 `endpoint_sunset`.",
  deprecated: true,
  ...publicReadOperation(deprecatedPetRead),
  request: { params: petIdParams },
  responses: {
    ...readResponses(PetSchema, "The pet.", {
      Deprecation: { description: "When this endpoint was deprecated (RFC 9745).", schema: { type: "string" } },
      Sunset: { description: "When this endpoint stops working (RFC 8594).", schema: { type: "string" } },
      Link: { description: 'The successor endpoint (`rel="successor-version"`).', schema: { type: "string" } },
    }),
    ...errorResponses([400, 404, 410, 429, 500, 503]),
  },
});

const writeErrors = errorResponses([400, 401, 403, 404, 412, 413, 415, 429, 500, 503], {
  409: "The status change is not allowed (`invalid_transition`) or the pet kept changing (`concurrent_update`).",
  422: "The category does not exist (`category_not_found`).",
});

export const replace = route({
  method: "put",
  path: "/pets/{petId}",
  operationId: "replacePet",
  summary: "Replace a pet",
  description: "Full replace with a NewPet body (status defaults to available); status changes follow the transition rules.",
  ...protectedOperation("staff"),
  request: { params: petIdParams, headers: ifMatchHeader, body: jsonBody(NewPetSchema, "The pet's new state.") },
  responses: { 200: updatedContent(PetSchema, "The updated pet."), ...writeErrors },
});

export const patch = route({
  method: "patch",
  path: "/pets/{petId}",
  operationId: "updatePet",
  summary: "Update a pet",
  description: "Changes any subset of name, categoryId and status; status changes follow the transition rules.",
  ...protectedOperation("staff"),
  request: { params: petIdParams, headers: ifMatchHeader, body: mergePatchBody(PetPatchSchema, "The fields to change.") },
  responses: { 200: updatedContent(PetSchema, "The updated pet."), ...writeErrors },
});

export const remove = route({
  method: "delete",
  path: "/pets/{petId}",
  operationId: "deletePet",
  summary: "Delete a pet",
  description: "Deletes a pet that no order references, with its inventory entry.",
  ...protectedOperation("staff"),
  request: { params: petIdParams, headers: ifMatchHeader },
  responses: {
    204: { description: "Deleted." },
    ...errorResponses([400, 401, 403, 404, 412, 429, 500, 503], { 409: "Orders reference the pet (`pet_has_orders`)." }),
  },
});
