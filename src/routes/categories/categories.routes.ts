/** OpenAPI route definitions of /categories (docs/api.md#endpoints, Pets tag). */
import { z } from "@hono/zod-openapi";
import { errorResponses, idempotencyKeyHeaders, createdContent, ifMatchHeaders, readResponses, responseHeaders, updatedContent } from "../../http/schemas";
import { idParams, jsonBody, paginationQuery, operations } from "../../http/schemas";
import { mergePatchBody } from "../../http/merge-patch";
import { protectedOperation, publicReadOperation } from "../../middleware/security";
import { CategoriesSchema, CategoryPatchSchema, CategorySchema, NewCategorySchema } from "./categories.schemas";

const route = operations(["Pets"]);
const categoryIdParams = idParams("categoryId");
const ifMatchHeader = ifMatchHeaders("category");

export const list = route({
  method: "get",
  path: "/categories",
  operationId: "listCategories",
  summary: "List categories",
  description: 'Categories ordered by id; paginated with `Link: rel="next"`.',
  ...publicReadOperation(),
  request: { query: z.strictObject({ ...paginationQuery }) },
  responses: { ...readResponses(CategoriesSchema, "A page of categories.", { Link: responseHeaders.Link }), ...errorResponses([400, 429, 500, 503]) },
});

export const create = route({
  method: "post",
  path: "/categories",
  operationId: "createCategory",
  summary: "Create a category",
  description: "Creates a category; names are trimmed and unique case-insensitively (409 `duplicate_name`).",
  ...protectedOperation("staff"),
  request: { headers: idempotencyKeyHeaders, body: jsonBody(NewCategorySchema, "The new category.") },
  responses: {
    201: createdContent(CategorySchema, "The created category."),
    ...errorResponses([400, 401, 403, 413, 415, 429, 500, 503], {
      409: "The name is taken (`duplicate_name`), or a request with this Idempotency-Key is still in progress (`concurrent_update`).",
      422: "The Idempotency-Key was used with another body (`idempotency_key_reused`).",
    }),
  },
});

export const get = route({
  method: "get",
  path: "/categories/{categoryId}",
  operationId: "getCategory",
  summary: "Get a category",
  description: "One category by id, with a strong `ETag` for conditional requests.",
  ...publicReadOperation(),
  request: { params: categoryIdParams },
  responses: { ...readResponses(CategorySchema, "The category."), ...errorResponses([400, 404, 429, 500, 503]) },
});

export const patch = route({
  method: "patch",
  path: "/categories/{categoryId}",
  operationId: "updateCategory",
  summary: "Update a category",
  description: "Changes the name and/or description (`null` removes the description); `If-Match` guards against lost updates.",
  ...protectedOperation("staff"),
  request: { params: categoryIdParams, headers: ifMatchHeader, body: mergePatchBody(CategoryPatchSchema, "The fields to change.") },
  responses: {
    200: updatedContent(CategorySchema, "The updated category."),
    ...errorResponses([400, 401, 403, 404, 412, 413, 415, 429, 500, 503], {
      409: "The name is taken (`duplicate_name`) or the category kept changing (`concurrent_update`).",
    }),
  },
});

export const remove = route({
  method: "delete",
  path: "/categories/{categoryId}",
  operationId: "deleteCategory",
  summary: "Delete a category",
  description: "Deletes a category that no pet references.",
  ...protectedOperation("staff"),
  request: { params: categoryIdParams, headers: ifMatchHeader },
  responses: {
    204: { description: "Deleted." },
    ...errorResponses([400, 401, 403, 404, 412, 429, 500, 503], { 409: "Pets reference the category (`category_in_use`)." }),
  },
});
