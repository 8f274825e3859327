/** OpenAPI route definitions of /store/inventory (docs/api.md#endpoints, Store tag). */
import { z } from "@hono/zod-openapi";
import { errorResponses, ifMatchHeaders, jsonBody, idListQuery, idParams, readResponses, paginationQuery, responseHeaders } from "../../http/schemas";
import { updatedContent, operations, optionalParam } from "../../http/schemas";
import { protectedOperation, publicReadOperation } from "../../middleware/security";
import { PetStatusSchema } from "../pets/pets.schemas";
import { InventoryItemSchema, InventoryItemsSchema, InventoryUpdateSchema } from "./inventory.schemas";

const route = operations(["Store"]);

export const list = route({
  method: "get",
  path: "/store/inventory",
  operationId: "listInventory",
  summary: "List inventory entries",
  description: 'Stock per pet ordered by petId, filtered by status or pets; paginated with `Link: rel="next"`.',
  ...publicReadOperation(),
  request: {
    query: z.strictObject({
      status: optionalParam(PetStatusSchema, "query", "status", "Only entries whose pet has this status."),
      petId: idListQuery("petId", "Only these pets (repeatable, at most 100)."),
      ...paginationQuery,
    }),
  },
  responses: {
    ...readResponses(InventoryItemsSchema, "A page of inventory entries.", { Link: responseHeaders.Link }),
    ...errorResponses([400, 429, 500, 503]),
  },
});

export const get = route({
  method: "get",
  path: "/store/inventory/{petId}",
  operationId: "getInventoryItem",
  summary: "Get a pet's inventory entry",
  description: "Units of the pet that can still be ordered, with the pet's status.",
  ...publicReadOperation(),
  request: { params: idParams("petId") },
  responses: {
    ...readResponses(InventoryItemSchema, "The inventory entry."),
    ...errorResponses([400, 404, 429, 500, 503]),
  },
});

export const replace = route({
  method: "put",
  path: "/store/inventory/{petId}",
  operationId: "setInventory",
  summary: "Set a pet's stock",
  description: "Sets the quantity that can be ordered. A quantity above 0 makes the pet available; 0 makes it pending when it has open orders, else sold.",
  ...protectedOperation("staff"),
  request: { params: idParams("petId"), headers: ifMatchHeaders("inventory entry"), body: jsonBody(InventoryUpdateSchema, "The new stock count.") },
  responses: {
    200: updatedContent(InventoryItemSchema, "The updated inventory entry."),
    ...errorResponses([400, 401, 403, 404, 412, 413, 415, 429, 500, 503]),
  },
});
