/** Payload shapes of the event feed (docs/api.md#events-and-webhooks): Event, EventType. */
import { z } from "@hono/zod-openapi";
import { MAX_ID } from "../../http/schemas";
import { EVENT_TYPES } from "../../domain/events";

export const EventTypeSchema = z.enum(EVENT_TYPES).openapi("EventType", {
  description:
    "What changed. `pet.*` carry a Pet, `category.*` a Category, `inventory.updated` an InventoryItem, `order.*` an Order. More types may be added (beta); ignore the ones you do not know.",
  example: "pet.created",
});

export const EventSchema = z
  .object({
    id: z.number().int().min(1).max(MAX_ID).openapi({
      format: "int64",
      description: "Position in the log: ids increase in commit order. Pass the last one you processed as `after`.",
      example: 42,
    }),
    type: EventTypeSchema,
    occurredAt: z.string().openapi({ format: "date-time", description: "When the change was committed (UTC).", example: "2026-11-21T12:00:00.000Z" }),
    // `additionalProperties: {}`: any values; zod-to-openapi's own `{ nullable: true }` without a type is invalid in OpenAPI 3.0.3.
    data: z.record(z.string(), z.unknown()).openapi({
      additionalProperties: {},
      description: "The resource after the change, in its API representation (for `*.deleted`: its last state).",
      example: { id: 7, name: "Rex", categoryId: 1, status: "available" },
    }),
  })
  .openapi("Event", { description: "One change, written in the same transaction as the change itself (transactional outbox)." });

export const EventsSchema = z.array(EventSchema).openapi("Events", { description: "Events in commit order." });
