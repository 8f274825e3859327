/** Payload shapes of categories (docs/api.md#resources: NewCategory, CategoryPatch, Category). */
import { z } from "@hono/zod-openapi";
import { mergePatchSchema } from "../../http/merge-patch";
import { MAX_ID } from "../../http/schemas";
import { CATEGORY } from "../../db/schema";

const name = z
  .string()
  .trim()
  .min(1)
  .max(100)
  .openapi({ description: "Category name, unique case-insensitively (trimmed, 1-100 characters).", example: "Dog" });
const description = z.string().max(1000).openapi({ description: "Short description of the category (at most 1000 characters).", example: "Domestic dogs" });

export const NewCategorySchema = z
  .strictObject({ name, description: description.optional() })
  .openapi("NewCategory", { description: "The payload for creating a category." });

export const CategoryPatchSchema = mergePatchSchema("CategoryPatch", NewCategorySchema.shape, CATEGORY.optional, "a category");

export const CategorySchema = z
  .object({
    id: z.number().int().min(1).max(MAX_ID).openapi({ format: "int64", description: "Unique identifier assigned on creation.", example: 1 }),
    name: z.string().openapi({ example: "Dog" }),
    description: z.string().optional().openapi({ example: "Domestic dogs" }),
  })
  .openapi("Category");

export const CategoriesSchema = z.array(CategorySchema).openapi("Categories", { description: "An array of Category objects." });
