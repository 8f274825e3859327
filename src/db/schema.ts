/**
 * The Drizzle tables of the Petstore database, each representation beside its table (docs/architecture.md#adding-a-field). Columns are
 * snake_case (`casing`); times RFC 3339 UTC strings; ids INTEGER PRIMARY KEY from 1 (within 2^53-1); `version` backs If-Match (RFC 9110 §13.1.1).
 */
import { sql } from "drizzle-orm";
import { check, index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { EVENT_TYPES } from "../domain/events";
import { PET_STATUSES } from "../domain/pets";
import { ROLES } from "../domain/principal";
import { DELIVERY_STATUSES, MAX_IN_FLIGHT, WEBHOOK_ORDERINGS, WEBHOOK_STATUSES } from "../domain/webhooks";
import { type Creatable, type Patch, type Representation, representation } from "./representation";

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
export type CategoryPatch = Patch<typeof CATEGORY>;

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
export type PetPatch = Patch<typeof PET>;

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
  /** W3C `traceparent` of the write that committed it (traces on), for the delivery attempts' span link; else NULL. */
  traceparent: text(),
});

export const webhooks = sqliteTable(
  "webhooks",
  {
    id: integer().primaryKey({ autoIncrement: true }),
    url: text().notNull(),
    /** JSON array of subscribed event types: they apply to events after `typesSince`. */
    events: text().notNull(),
    secret: text().notNull(),
    /** The secret before the last rotation: it signs too until `previousSecretUntil` (docs/webhooks.md#rotating-the-secret). */
    previousSecret: text(),
    previousSecretUntil: text(),
    status: text({ enum: WEBHOOK_STATUSES }).notNull().default("active"),
    /** False: paused, nothing is sent and the subscription's place in the log waits. */
    enabled: integer({ mode: "boolean" }).notNull().default(true),
    createdAt: text().notNull(),
    /** The newest event when the subscription was created: it receives the events after this one. */
    lastEventId: integer().notNull().default(0),
    /** The newest event when `events` last changed: events up to it are matched against `previousEvents` (JSON array). */
    typesSince: integer().notNull().default(0),
    previousEvents: text(),
    /** Its delivery state (docs/webhooks.md#design): done up to this event; NULL: up to the dispatch frontier (`webhookDispatch.eventId`). */
    place: integer(),
    /** Failed attempts of the first wanted event after `place` (strict order), and when the next one is due. */
    attempts: integer().notNull().default(0),
    retryAt: text(),
    /** When it next has work (a due stream or redelivery; while claimed, the end of the claim); NULL: nothing known to do. */
    dueAt: text(),
    /** The claim of the process or isolate sending to it now (NULL: none). */
    leaseToken: text(),
    /** Its first failed attempt since its last delivered one (`WEBHOOK_DISABLE_AFTER_HOURS`); NULL: none. */
    failingSince: text(),
    /** Delivery mode (docs/webhooks.md#delivery-modes). */
    ordering: text({ enum: WEBHOOK_ORDERINGS }).notNull().default("strict"),
    maxInFlight: integer().notNull().default(MAX_IN_FLIGHT.default),
    /** Most deliveries per second; NULL: no limit. */
    rateLimit: integer(),
  },
  (t) => [index("webhooks_due_at_idx").on(t.dueAt).where(sql`${t.dueAt} IS NOT NULL`)],
);

/** The Webhook representation (docs/api.md#events-and-webhooks; `events` is JSON text, an array in the API) — never the secret. */
export const WEBHOOK = representation(webhooks, {
  id: webhooks.id,
  url: webhooks.url,
  events: webhooks.events,
  enabled: webhooks.enabled,
  status: webhooks.status,
  createdAt: webhooks.createdAt,
  ordering: webhooks.ordering,
  maxInFlight: webhooks.maxInFlight,
  rateLimit: webhooks.rateLimit,
});

/** The event types each subscription wants (`*`: all), a row each: a dispatch round finds an event's subscriptions by its type. */
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

/**
 * The dispatch frontier, one row (docs/webhooks.md#design): every subscription whose `place` is NULL is done up to `eventId`; while a run
 * holds `leaseToken` (until `leaseUntil`), it sends the events up to `leasedTo` to the `members` (JSON array of ids) and no one else does.
 */
export const webhookDispatch = sqliteTable(
  "webhook_dispatch",
  {
    id: integer().primaryKey(),
    eventId: integer().notNull(),
    leasedTo: integer(),
    leaseToken: text(),
    leaseUntil: text(),
    members: text(),
  },
  (t) => [check("webhook_dispatch_one_row", sql`${t.id} = 1`)],
);

/** The delivery log: a row per (subscription, event) from its first attempt, each status its own key range; event 0: the latest `webhook.test`. */
export const webhookDeliveries = sqliteTable(
  "webhook_deliveries",
  {
    webhookId: integer()
      .notNull()
      .references(() => webhooks.id, { onDelete: "cascade" }),
    status: text({ enum: DELIVERY_STATUSES }).notNull(),
    eventId: integer().notNull(),
    eventType: text().notNull(),
    attempts: integer().notNull(),
    /** Pending: when the next attempt is due. */
    nextAttemptAt: text(),
    lastAttemptAt: text().notNull(),
    lastStatusCode: integer(),
    lastError: text(),
    /** Delivered or given up: when (retention, 7 days). */
    finishedAt: text(),
  },
  (t) => [primaryKey({ columns: [t.webhookId, t.status, t.eventId] })],
);

/** Deliveries asked for outside the ordered stream (resend, recover, test), each until it is delivered or given up. */
export const webhookRedeliveries = sqliteTable(
  "webhook_redeliveries",
  {
    id: integer().primaryKey({ autoIncrement: true }),
    webhookId: integer()
      .notNull()
      .references(() => webhooks.id, { onDelete: "cascade" }),
    /** The event to send again; 0: a `webhook.test` event. */
    eventId: integer().notNull(),
    attempts: integer().notNull().default(0),
    nextAttemptAt: text().notNull(),
    createdAt: text().notNull(),
  },
  (t) => [index("webhook_redeliveries_webhook_id_idx").on(t.webhookId, t.nextAttemptAt)],
);
