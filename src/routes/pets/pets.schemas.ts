/** Payload shapes of pets (NewPet, Pet, Pets, PetStatus, PetPatch) with their limits (docs/api.md#resources). */
import { z } from "@hono/zod-openapi";
import { PET_STATUSES } from "../../domain/pets";
import { mergePatchSchema } from "../../http/merge-patch";
import { idNumber as id } from "../../http/schemas";
import { PET } from "../../db/schema";

export const PetStatusSchema = z.enum(PET_STATUSES).openapi("PetStatus", { description: "Status of the pet.", example: "available" });

const name = z.string().trim().min(1).max(100).openapi({ description: "The animal's name (trimmed, 1-100 characters).", example: "Bella" });

export const NewPetSchema = z
  .strictObject({
    name,
    categoryId: id.openapi({ description: "Identifier of the category the animal belongs to." }),
    status: PetStatusSchema.optional(),
  })
  .openapi("NewPet", { description: "The payload for creating or replacing a pet; status defaults to available." });

export const PetPatchSchema = mergePatchSchema("PetPatch", NewPetSchema.shape, PET.optional, "a pet (status changes follow the transition rules)");

export const PetSchema = z
  .object({
    id: id.openapi({ description: "Unique identifier assigned on creation." }),
    name: z.string().openapi({ example: "Bella" }),
    categoryId: id,
    status: PetStatusSchema,
  })
  .openapi("Pet");

export const PetsSchema = z.array(PetSchema).openapi("Pets", { description: "An array of Pet objects." });
