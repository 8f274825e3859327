/** Payload shapes of orders (docs/api.md#resources: NewOrder, OrderUpdate, Order). */
import { z } from "@hono/zod-openapi";
import { mergePatchSchema } from "../../http/merge-patch";
import { idNumber as id } from "../../http/schemas";
import { ORDER } from "../../db/schema";

/** RFC 3339 date-time with an offset, normalised to UTC, in the years 0001–9999 (outside them `toISOString` is not RFC 3339). */
const shipDate = z.iso
  .datetime({ offset: true })
  .transform((v) => new Date(v).toISOString())
  .refine((iso) => /^\d{4}-/.test(iso) && !iso.startsWith("0000-"), "Must be between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z in UTC.")
  .openapi({ format: "date-time", description: "Expected or actual ship date (RFC 3339).", example: "2026-12-01T10:00:00.000Z" });

export const NewOrderSchema = z
  .strictObject({
    petId: id.openapi({ description: "The pet to order." }),
    quantity: z.number().int().min(1).max(1000).openapi({ description: "Units to order (1-1000).", example: 1 }),
    shipDate: shipDate.optional(),
  })
  .openapi("NewOrder", { description: "The payload for placing an order." });

export const OrderUpdateSchema = mergePatchSchema(
  "OrderUpdate",
  { shipDate, complete: z.boolean().openapi({ description: "`true` fulfils the order (with no shipDate: now)." }) },
  ORDER.optional,
  "an open order",
);

export const OrderSchema = z
  .object({
    id: id.openapi({ description: "Unique order identifier." }),
    petId: id.openapi({ description: "Identifier of the animal in the order." }),
    quantity: z.number().int().openapi({ description: "Number of units ordered.", example: 1 }),
    shipDate: z.string().optional().openapi({ format: "date-time", description: "Expected or actual ship date." }),
    complete: z.boolean().openapi({ description: "Whether the order has been fulfilled." }),
  })
  .openapi("Order");

export const OrdersSchema = z.array(OrderSchema).openapi("Orders", { description: "An array of Order objects." });
