/** Every event type the service writes (docs/api.md#events-and-webhooks), resource first. */
export const EVENT_TYPES = [
  "pet.created",
  "pet.updated",
  "pet.deleted",
  "category.created",
  "category.updated",
  "category.deleted",
  "inventory.updated",
  "order.placed",
  "order.updated",
  "order.fulfilled",
  "order.cancelled",
] as const;
export type EventType = (typeof EVENT_TYPES)[number];
