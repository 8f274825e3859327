/**
 * Drizzle schema of the Petstore database, each representation beside its table (docs/architecture.md#adding-a-field). Columns are
 * snake_case (`casing`); times RFC 3339 UTC strings; ids INTEGER PRIMARY KEY from 1 (within 2^53-1); `version` backs If-Match (RFC 9110 §13.1.1).
 */
import { sql } from "drizzle-orm";
import { check, index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { EVENT_TYPES } from "../domain/events";
import { PET_STATUSES } from "../domain/pets";
import { ROLES } from "../domain/principal";
import { type Creatable, type Representation, representation } from "./representation";

export const categories = sqliteTable(
  "categories",
  {
    id: integer().primaryKey({ autoIncrement: true }),
    name: text().notNull(),
    /** Case-folded name (Unicode `toLowerCase`), the uniqueness key. */
    nameKey: text().notNull(),
    description: text(),
    version: integer().notNull().default(1),
  },
  (t) => [uniqueIndex("categories_name_key_unique").on(t.nameKey)],
);

/** The Category representation (docs/api.md#resources) and what creates one. */
export const CATEGORY = representation(categories, { id: categories.id, name: categories.name, description: categories.description });
export type Category = Representation<typeof CATEGORY.columns>;
export type NewCategory = Creatable<typeof CATEGORY>;

export const pets = sqliteTable(
  "pets",
  {
    id: integer().primaryKey({ autoIncrement: true }),
    name: text().notNull(),
    categoryId: integer()
      .notNull()
      .references(() => categories.id, { onDelete: "restrict" }),
    status: text({ enum: PET_STATUSES }).notNull().default("available"),
    version: integer().notNull().default(1),
  },
  (t) => [
    index("pets_status_id_idx").on(t.status, t.id),
    index("pets_category_id_id_idx").on(t.categoryId, t.id),
    index("pets_category_id_status_idx").on(t.categoryId, t.status),
    check("pets_status_check", sql`${t.status} in ('available', 'pending', 'sold')`),
  ],
);

/** The Pet representation (docs/api.md#resources) and what creates one (a missing status means available). */
export const PET = representation(pets, { id: pets.id, name: pets.name, categoryId: pets.categoryId, status: pets.status });
export type Pet = Representation<typeof PET.columns>;
export type NewPet = Creatable<typeof PET>;

export const inventory = sqliteTable(
  "inventory",
  {
    petId: integer()
      .primaryKey()
      .references(() => pets.id, { onDelete: "cascade" }),
    quantity: integer().notNull(),
    version: integer().notNull().default(1),
  },
  (t) => [check("inventory_quantity_check", sql`${t.quantity} >= 0`)],
);

/** The InventoryItem representation (docs/api.md#resources): the stock, with its pet's status. */
export const INVENTORY_ITEM = representation(inventory, { petId: inventory.petId, quantity: inventory.quantity, status: pets.status });
export type InventoryItem = Representation<typeof INVENTORY_ITEM.columns>;

export const accounts = sqliteTable(
  "accounts",
  {
    id: integer().primaryKey({ autoIncrement: true }),
    name: text().notNull(),
    email: text().notNull(),
    /** Case-folded email, the uniqueness key. */
    emailKey: text().notNull(),
    role: text({ enum: ROLES }).notNull(),
    createdAt: text().notNull(),
  },
  (t) => [
    uniqueIndex("accounts_email_key_unique").on(t.emailKey),
    // Staff accounts only: "is there a staff account?" at start-up reads one entry.
    index("accounts_staff_idx").on(t.role).where(sql`${t.role} = 'staff'`),
  ],
);

export const apiKeys = sqliteTable(
  "api_keys",
  {
    id: integer().primaryKey({ autoIncrement: true }),
    accountId: integer()
      .notNull()
      .references(() => accounts.id, { onDelete: "cascade" }),
    name: text(),
    /** Display prefix of the secret, e.g. `psk_AbCd`. */
    prefix: text().notNull(),
    /** Hex SHA-256 of the whole secret; the secret itself is never stored. */
    secretHash: text().notNull(),
    createdAt: text().notNull(),
    lastUsedAt: text(),
    revokedAt: text(),
  },
  (t) => [
    uniqueIndex("api_keys_secret_hash_unique").on(t.secretHash),
    index("api_keys_account_id_idx").on(t.accountId),
    // Revoked keys only, for retention.
    index("api_keys_revoked_at_idx").on(t.revokedAt).where(sql`${t.revokedAt} is not null`),
  ],
);

export const orders = sqliteTable(
  "orders",
  {
    id: integer().primaryKey({ autoIncrement: true }),
    petId: integer()
      .notNull()
      .references(() => pets.id, { onDelete: "restrict" }),
    accountId: integer()
      .notNull()
      .references(() => accounts.id, { onDelete: "restrict" }),
    quantity: integer().notNull(),
    shipDate: text(),
    complete: integer({ mode: "boolean" }).notNull().default(false),
    createdAt: text().notNull(),
    version: integer().notNull().default(1),
    /** Random token of the batch that placed the order: later statements of that batch find the row by it. */
    placementToken: text().notNull(),
  },
  (t) => [
    uniqueIndex("orders_placement_token_unique").on(t.placementToken),
    index("orders_account_id_id_idx").on(t.accountId, t.id),
    index("orders_pet_id_complete_idx").on(t.petId, t.complete),
    // Every filter of GET /store/orders walks an index in id order (the rowid ends each index).
    index("orders_pet_id_idx").on(t.petId),
    index("orders_complete_idx").on(t.complete),
    index("orders_account_id_pet_id_idx").on(t.accountId, t.petId),
    index("orders_account_id_complete_idx").on(t.accountId, t.complete),
    check("orders_quantity_check", sql`${t.quantity} between 1 and 1000`),
  ],
);

/** The Order representation (docs/api.md#resources): `shipDate` absent until known. */
export const ORDER = representation(orders, {
  id: orders.id,
  petId: orders.petId,
  quantity: orders.quantity,
  shipDate: orders.shipDate,
  complete: orders.complete,
});
export type Order = Representation<typeof ORDER.columns>;

export const idempotencyKeys = sqliteTable(
  "idempotency_keys",
  {
    accountId: integer()
      .notNull()
      .references(() => accounts.id, { onDelete: "cascade" }),
    key: text().notNull(),
    method: text().notNull(),
    path: text().notNull(),
    /** Hex SHA-256 of the request body as received. */
    requestHash: text().notNull(),
    responseStatus: integer().notNull(),
    responseBody: text().notNull(),
    /** JSON object of response headers worth replaying (Location). */
    responseHeaders: text().notNull(),
    createdAt: text().notNull(),
    /** Random token of the request that holds or held the claim: only it records or releases the row. */
    claimToken: text().notNull().default(""),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.key] }), index("idempotency_keys_created_at_idx").on(t.createdAt)],
);

export const events = sqliteTable("events", {
  id: integer().primaryKey({ autoIncrement: true }),
  type: text({ enum: EVENT_TYPES }).notNull(),
  occurredAt: text().notNull(),
  /** JSON text of the resource after the change. */
  data: text().notNull(),
});

export const webhooks = sqliteTable(
  "webhooks",
  {
    id: integer().primaryKey({ autoIncrement: true }),
    url: text().notNull(),
    /** JSON array of subscribed event types. */
    events: text().notNull(),
    secret: text().notNull(),
    status: text({ enum: ["active", "failing"] })
      .notNull()
      .default("active"),
    createdAt: text().notNull(),
    /** The newest event when the subscription was created: it receives the events after this one. */
    lastEventId: integer().notNull().default(0),
  },
  // Failing subscriptions only: fan-out counts their backlog.
  (t) => [index("webhooks_failing_idx").on(t.status).where(sql`${t.status} = 'failing'`)],
);

/** The event types each subscription wants (`*`: all), a row each: fan-out finds an event's subscriptions by its type. */
export const webhookEventTypes = sqliteTable(
  "webhook_event_types",
  {
    type: text().notNull(),
    webhookId: integer()
      .notNull()
      .references(() => webhooks.id, { onDelete: "cascade" }),
  },
  (t) => [primaryKey({ columns: [t.type, t.webhookId] }), index("webhook_event_types_webhook_id_idx").on(t.webhookId)],
);

/** The fan-out cursor, one row (id 1): deliveries exist for every wanted event with id <= `lastEventId` (docs/webhooks.md#design). */
export const webhookFanout = sqliteTable(
  "webhook_fanout",
  {
    id: integer().primaryKey(),
    lastEventId: integer().notNull(),
  },
  (t) => [check("webhook_fanout_one_row", sql`${t.id} = 1`)],
);

export const webhookDeliveries = sqliteTable(
  "webhook_deliveries",
  {
    id: integer().primaryKey({ autoIncrement: true }),
    webhookId: integer()
      .notNull()
      .references(() => webhooks.id, { onDelete: "cascade" }),
    eventId: integer()
      .notNull()
      .references(() => events.id),
    status: text({ enum: ["pending", "delivered", "failed"] })
      .notNull()
      .default("pending"),
    attempts: integer().notNull().default(0),
    /** Pending: when the next attempt is due (or its claim's lease ends). Delivered/failed: when it finished (retention, 7 days). */
    nextAttemptAt: text().notNull(),
    lastStatusCode: integer(),
    lastError: text(),
    lastAttemptAt: text(),
    deliveredAt: text(),
  },
  (t) => [
    index("webhook_deliveries_due_idx").on(t.status, t.nextAttemptAt),
    // The head of a subscription's queue: its pending delivery with the lowest event id.
    index("webhook_deliveries_webhook_status_event_idx").on(t.webhookId, t.status, t.eventId),
    uniqueIndex("webhook_deliveries_webhook_event_unique").on(t.webhookId, t.eventId),
    // Deleting an event checks its deliveries (foreign key); retention finds the oldest one referred to.
    index("webhook_deliveries_event_id_idx").on(t.eventId),
  ],
);
