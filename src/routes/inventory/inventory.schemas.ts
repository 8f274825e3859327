/** Payload shapes of inventory (docs/api.md#resources: InventoryItem, InventoryUpdate). */
import { z } from "@hono/zod-openapi";
import { MAX_ID } from "../../http/schemas";
import { PetStatusSchema } from "../pets/pets.schemas";

export const InventoryItemSchema = z
  .object({
    petId: z.number().int().min(1).max(MAX_ID).openapi({ format: "int64", description: "Identifier of the animal the entry tracks.", example: 1 }),
    quantity: z.number().int().min(0).openapi({ description: "Units that can still be ordered.", example: 1 }),
    status: PetStatusSchema,
  })
  .openapi("InventoryItem");

export const InventoryItemsSchema = z.array(InventoryItemSchema).openapi("InventoryItems", { description: "An array of InventoryItem objects." });

export const InventoryUpdateSchema = z
  .strictObject({
    quantity: z.number().int().min(0).max(1_000_000).openapi({ description: "The new stock count (0-1,000,000).", example: 5 }),
  })
  .openapi("InventoryUpdate");
