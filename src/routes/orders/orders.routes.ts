/** OpenAPI route definitions of /store/orders (docs/api.md#endpoints, #stock-and-ordering; Store tag). */
import { z } from "@hono/zod-openapi";
import { booleanQuery, errorResponses, idempotencyKeyHeaders, createdContent, idParams, idQuery, ifMatchHeaders, jsonBody } from "../../http/schemas";
import { readResponses, paginationQuery, responseHeaders, updatedContent, operations } from "../../http/schemas";
import { mergePatchBody } from "../../http/merge-patch";
import { protectedOperation, protectedRead } from "../../middleware/security";
import { NewOrderSchema, OrderSchema, OrdersSchema, OrderUpdateSchema } from "./orders.schemas";

const route = operations(["Store"]);
const customerOrStaff = protectedOperation("customer", "staff");
const staffOnly = protectedOperation("staff");
const orderIdParams = idParams("orderId");

export const list = route({
  method: "get",
  path: "/store/orders",
  operationId: "listOrders",
  summary: "List orders",
  description: 'Customers see only their own orders, staff see all; ordered by id, paginated with `Link: rel="next"`.',
  ...protectedRead("customer", "staff"),
  request: {
    query: z.strictObject({
      petId: idQuery("petId", "Only orders of this pet."),
      complete: booleanQuery("complete", "Only fulfilled (`true`) or open (`false`) orders."),
      ...paginationQuery,
    }),
  },
  responses: { ...readResponses(OrdersSchema, "A page of orders.", { Link: responseHeaders.Link }), ...errorResponses([400, 401, 403, 429, 500, 503]) },
});

export const create = route({
  method: "post",
  path: "/store/orders",
  operationId: "placeOrder",
  summary: "Place an order",
  description:
    "Takes `quantity` units of an available pet; when its stock reaches 0 the pet becomes pending. Send `Idempotency-Key` to retry safely: the same key and body within 24 h replays the first response with `Idempotent-Replayed: true`.",
  ...customerOrStaff,
  request: { headers: idempotencyKeyHeaders, body: jsonBody(NewOrderSchema, "The order.") },
  responses: {
    201: createdContent(OrderSchema, "The placed order (or the replay of the first response for this Idempotency-Key)."),
    ...errorResponses([400, 401, 403, 413, 415, 429, 500, 503], {
      409: "The pet is not available (`pet_not_available`) or has too little stock (`insufficient_stock`); nothing changed.",
      422: "The pet does not exist (`pet_not_found`) or the Idempotency-Key was used with another body (`idempotency_key_reused`).",
    }),
  },
});

export const get = route({
  method: "get",
  path: "/store/orders/{orderId}",
  operationId: "getOrder",
  summary: "Get an order",
  description: "The caller's own order (staff: any order). Another customer's order is 404.",
  ...protectedRead("customer", "staff"),
  request: { params: orderIdParams },
  responses: { ...readResponses(OrderSchema, "The order."), ...errorResponses([400, 401, 403, 404, 429, 500, 503]) },
});

export const patch = route({
  method: "patch",
  path: "/store/orders/{orderId}",
  operationId: "updateOrder",
  summary: "Fulfil or reschedule an order",
  description: "`complete: true` fulfils an open order (shipDate defaults to now); when the pet's stock is 0 and no other order is open, the pet becomes sold.",
  ...staffOnly,
  request: { params: orderIdParams, headers: ifMatchHeaders("order"), body: mergePatchBody(OrderUpdateSchema, "The changes.") },
  responses: {
    200: updatedContent(OrderSchema, "The updated order."),
    ...errorResponses([400, 401, 403, 404, 412, 413, 415, 429, 500, 503], { 409: "The order is already fulfilled (`order_complete`)." }),
  },
});

export const remove = route({
  method: "delete",
  path: "/store/orders/{orderId}",
  operationId: "cancelOrder",
  summary: "Cancel an order",
  description: "Cancels an open order of the caller (staff: any): its quantity returns to stock and a pending pet becomes available.",
  ...customerOrStaff,
  request: { params: orderIdParams, headers: ifMatchHeaders("order") },
  responses: {
    204: { description: "Cancelled." },
    ...errorResponses([400, 401, 403, 404, 412, 429, 500, 503], { 409: "The order is fulfilled (`order_complete`)." }),
  },
});
