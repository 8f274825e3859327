/**
 * Orders (API.md §3-§4): placing, fulfilling and cancelling with the stock
 * rules, exact under concurrency without interactive transactions.
 *
 * Placing an order is ONE batch (one round trip), idempotency included:
 *   0. claim the Idempotency-Key (src/services/idempotency.service.ts: one
 *      row per account and key; an expired response or abandoned claim is taken over);
 *   1. take the stock: `UPDATE inventory SET quantity = quantity - q WHERE
 *      quantity >= q AND pet available` (guarded by the claim via changes());
 *   2. insert the order only if 1 changed a row, tagged with a random
 *      placement token; every later statement finds "the order of this batch"
 *      by that token, so the batch as a whole places the order or changes nothing;
 *   3. the pet becomes `pending` when its stock reached 0; events are appended
 *      (transactional outbox, API.md §6, one INSERT); the idempotency row gets the response;
 *   4. read back what the caller needs to tell success, replay or the reason of a refusal.
 * SQLite runs a batch as one serialised write transaction, on the embedded file
 * and on sqld alike, so two batches can never both take the last unit.
 */
import { and, eq, exists, gt, gte, sql, type SQL } from "drizzle-orm";
import { alias, type SQLiteColumn, unionAll } from "drizzle-orm/sqlite-core";
import type { Database } from "../db/client";
import { perDatabase, preparedVariants, step, writeBatch } from "../db/batch";
import { eventColumns, inventoryUpdatedWhen, orderData, petUpdatedIfChanged } from "../db/events";
import { aliasedColumns } from "../db/select-list";
import { events, idempotencyKeys, inventory, orders, pets } from "../db/schema";
import type { EventType } from "../domain/events";
import type { PetStatus } from "../domain/pets";
import { ApiError, notFound } from "../lib/errors";
import { assertIfMatch } from "../lib/http-cache";
import type { Principal } from "../domain/principal";
import { claimStep, existingResponse, keyColumns, releaseStep, requestFingerprint } from "./idempotency.service";

/** Order representation (`shipDate` absent until known). */
export interface Order {
  id: number;
  petId: number;
  quantity: number;
  shipDate?: string;
  complete: boolean;
}

export interface NewOrder {
  petId: number;
  quantity: number;
  shipDate?: string;
}

export interface OrderFilter {
  petId?: number;
  complete?: boolean;
}

/** A response to send: the body as stored (so replays are byte-identical) and its headers. */
export interface PlacedOrder {
  status: 201;
  body: Order;
  location: string;
  replayed: boolean;
}

/** The columns of the Order representation. */
const orderColumns = { id: orders.id, petId: orders.petId, quantity: orders.quantity, shipDate: orders.shipDate, complete: orders.complete };

/** An order row as `orderColumns` selects it. */
type OrderRow = Pick<typeof orders.$inferSelect, keyof typeof orderColumns>;

function toOrder(row: OrderRow): Order {
  const order: Order = { id: row.id, petId: row.petId, quantity: row.quantity, complete: row.complete };
  if (row.shipDate !== null) order.shipDate = row.shipDate;
  return order;
}

/**
 * "The caller may see the order", on the `accountId` column of orders or of
 * an alias of it: the placeholder `accountId` is the customer's account, NULL
 * for staff (all orders). For lookups by id only: on lists it would keep
 * SQLite from using the account's index (`listQuery` has a variant per role instead).
 */
function visibleTo(accountId: SQLiteColumn): SQL {
  return sql`(${sql.placeholder("accountId")} is null or ${accountId} = ${sql.placeholder("accountId")})`;
}

/** The value of the placeholder `accountId` of `visibleTo` for `principal`. */
function viewer(principal: Principal): number | null {
  return principal.role === "staff" ? null : principal.accountId;
}

/** "The order placed by this batch": the order row tagged with the placeholder `token`. */
const placedHere = sql`exists (select 1 from ${orders} where ${orders.placementToken} = ${sql.placeholder("token")})`;

function randomToken(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * The list query for one combination of filters (placeholders `afterId`,
 * `limit`, and `accountId`, `petId`, `complete` when filtered): a fixed
 * query per combination, so each one uses its index (the customer's orders:
 * `orders_account_id_id_idx`; a pet's: `orders_pet_id_complete_idx`). Built
 * on first use, once per database.
 */
const listQuery = preparedVariants((db: Database, own: boolean, byPet: boolean, byComplete: boolean) =>
  db
    .select(orderColumns)
    .from(orders)
    .where(
      and(
        gt(orders.id, sql.placeholder("afterId")),
        own ? eq(orders.accountId, sql.placeholder("accountId")) : undefined,
        byPet ? eq(orders.petId, sql.placeholder("petId")) : undefined,
        byComplete ? eq(orders.complete, sql.placeholder("complete")) : undefined,
      ),
    )
    .orderBy(orders.id)
    .limit(sql.placeholder("limit"))
    .prepare(),
);

/** Up to `limit` orders the caller may see, id > `afterId`, ascending. One round trip. */
export async function listOrders(db: Database, principal: Principal, filter: OrderFilter, afterId: number, limit: number): Promise<Order[]> {
  const own = principal.role !== "staff";
  const query = listQuery(db, own, filter.petId !== undefined, filter.complete !== undefined);
  const rows = await query.all({
    afterId,
    limit,
    accountId: principal.accountId,
    petId: filter.petId ?? null,
    complete: filter.complete ?? null,
  });
  return rows.map(toOrder);
}

/** The order (placeholder `orderId`) with its version, if the caller (`accountId`, see `visibleTo`) may see it. */
const orderQuery = perDatabase((db) =>
  db
    .select({ ...orderColumns, version: orders.version })
    .from(orders)
    .where(and(eq(orders.id, sql.placeholder("orderId")), visibleTo(orders.accountId)))
    .prepare(),
);

async function readOrder(db: Database, principal: Principal, orderId: number): Promise<{ order: Order; version: number }> {
  const row = await orderQuery(db).get({ orderId, accountId: viewer(principal) });
  // Another customer's order is 404, never 403 (API.md §2): its existence is not disclosed.
  if (!row) throw notFound("Order", orderId);
  return { order: toOrder(row), version: row.version };
}

/**
 * With `If-Match`: the order's version after checking the header against its
 * current representation (one round trip); without: null (no read).
 * @throws ApiError 404, 412 `precondition_failed`.
 */
async function versionMatching(db: Database, principal: Principal, orderId: number, ifMatch: string | undefined): Promise<number | null> {
  if (ifMatch === undefined) return null;
  const current = await readOrder(db, principal, orderId);
  await assertIfMatch(ifMatch, current.order);
  return current.version;
}

/** @throws ApiError 404 when absent or not the caller's. One round trip. */
export async function getOrder(db: Database, principal: Principal, orderId: number): Promise<Order> {
  return (await readOrder(db, principal, orderId)).order;
}

/**
 * Takes the stock of an order (placeholders `petId`, `quantity`) while the pet
 * is available; `claimed`: only when the statement before (the claim of the
 * Idempotency-Key) changed a row.
 */
function takeStock(db: Database, claimed: boolean) {
  return db
    .update(inventory)
    .set({ quantity: sql`${inventory.quantity} - ${sql.placeholder("quantity")}`, version: sql`${inventory.version} + 1` })
    .where(
      and(
        eq(inventory.petId, sql.placeholder("petId")),
        gte(inventory.quantity, sql.placeholder("quantity")),
        sql`(select ${pets.status} from ${pets} where ${pets.id} = ${sql.placeholder("petId")}) = 'available'`,
        claimed ? sql`changes() = 1` : undefined,
      ),
    )
    .prepare();
}

const takeStockQuery = perDatabase((db) => takeStock(db, false));
const takeClaimedStockQuery = perDatabase((db) => takeStock(db, true));

/**
 * The statements of an order placement after taking the stock, built once per
 * database. Placeholders: `petId`, `accountId`, `quantity`, `shipDate`,
 * `token` (the placement token), `occurredAt` (now).
 */
const placeQueries = perDatabase((db) => ({
  /** Inserts the order only when taking the stock changed a row (the statement before). */
  insertOrder: db
    .insert(orders)
    .select(
      db
        .select(
          aliasedColumns({
            id: sql<number>`NULL`,
            petId: inventory.petId,
            accountId: sql<number>`${sql.placeholder("accountId")}`,
            quantity: sql<number>`${sql.placeholder("quantity")}`,
            shipDate: sql<string | null>`${sql.placeholder("shipDate")}`,
            complete: sql<boolean>`0`,
            createdAt: sql<string>`${sql.placeholder("occurredAt")}`,
            version: sql<number>`1`,
            placementToken: sql<string>`${sql.placeholder("token")}`,
          }),
        )
        .from(inventory)
        .where(and(eq(inventory.petId, sql.placeholder("petId")), sql`changes() = 1`)),
    )
    .prepare(),
  /** The pet becomes pending when this batch's order took its last unit. */
  petPending: db
    .update(pets)
    .set({ status: "pending", version: sql`${pets.version} + 1` })
    .where(
      and(
        eq(pets.id, sql.placeholder("petId")),
        sql`${pets.status} = 'available'`,
        sql`(select ${inventory.quantity} from ${inventory} where ${inventory.petId} = ${sql.placeholder("petId")}) = 0`,
        placedHere,
      ),
    )
    .prepare(),
  /**
   * The events of the placement, in this order: `pet.updated` (when the pet
   * became pending, the statement before), `order.placed`, `inventory.updated`.
   * One statement: SQLite runs the members of a UNION ALL one after another,
   * so the rows are inserted (and numbered) in this order, and `changes()`
   * still counts the statement before.
   */
  events: db
    .insert(events)
    .select(
      unionAll(
        petUpdatedIfChanged(db, sql.placeholder("petId")),
        db
          .select(eventColumns("order.placed", orderData))
          .from(orders)
          .where(eq(orders.placementToken, sql.placeholder("token"))),
        inventoryUpdatedWhen(db, sql.placeholder("petId"), placedHere),
      ),
    )
    .prepare(),
  /**
   * One read-back row: the order placed by this batch (if any), the pet's
   * state, and the row of the Idempotency-Key (placeholder `key`, NULL without one).
   */
  readBack: db
    .select({
      order: orderColumns,
      petStatus: sql<PetStatus | null>`(select ${pets.status} from ${pets} where ${pets.id} = ${sql.placeholder("petId")})`,
      quantity: sql<number | null>`(select ${inventory.quantity} from ${inventory} where ${inventory.petId} = ${sql.placeholder("petId")})`,
      key: keyColumns,
    })
    .from(sql`(select 1)`)
    .leftJoin(orders, eq(orders.placementToken, sql.placeholder("token")))
    .leftJoin(idempotencyKeys, and(eq(idempotencyKeys.accountId, sql.placeholder("accountId")), eq(idempotencyKeys.key, sql.placeholder("key"))))
    .prepare(),
}));

/** Stores the placed order (placeholder `token`) as the response of the Idempotency-Key (`accountId`, `key`). */
const recordOrderQuery = perDatabase((db) =>
  db
    .update(idempotencyKeys)
    .set({
      responseStatus: 201,
      responseBody: sql`(select ${orderData} from ${orders} where ${orders.placementToken} = ${sql.placeholder("token")})`,
      responseHeaders: sql`(select json_object('Location', '/store/orders/' || ${orders.id}) from ${orders} where ${orders.placementToken} = ${sql.placeholder("token")})`,
    })
    .where(and(eq(idempotencyKeys.accountId, sql.placeholder("accountId")), eq(idempotencyKeys.key, sql.placeholder("key")), placedHere))
    .prepare(),
);

/**
 * Place an order for the caller, honouring `idempotencyKey` (API.md §4). One round trip.
 * @throws ApiError 409 `pet_not_available` | `insufficient_stock`, 422 `pet_not_found` | `idempotency_key_reused`.
 */
export async function placeOrder(db: Database, principal: Principal, input: NewOrder, idempotencyKey: string | undefined, now: Date): Promise<PlacedOrder> {
  const { petId, quantity } = input;
  const { accountId } = principal;
  const values = {
    petId,
    accountId,
    quantity,
    shipDate: input.shipDate ?? null,
    token: randomToken(),
    occurredAt: now.toISOString(),
    key: idempotencyKey ?? null,
  };
  const q = placeQueries(db);
  const placement = [step(q.insertOrder, values), step(q.petPending, values), step(q.events, values)] as const;
  // Only an Idempotency-Key needs the request's fingerprint (of the validated body: shipDate in UTC).
  const fingerprint = idempotencyKey === undefined ? "" : await requestFingerprint("POST", "/store/orders", input);
  // The last statement's rows: the read-back.
  const [row] =
    idempotencyKey === undefined
      ? (await writeBatch(db, [step(takeStockQuery(db), values), ...placement, step(q.readBack, values)] as const))[4]
      : (
          await writeBatch(db, [
            claimStep(db, accountId, idempotencyKey, "POST", "/store/orders", fingerprint, now),
            step(takeClaimedStockQuery(db), values),
            ...placement,
            step(recordOrderQuery(db), values),
            // A claim whose order was refused is released in the same transaction, so claims never outlive their batch.
            releaseStep(db, accountId, idempotencyKey),
            step(q.readBack, values),
          ] as const)
        )[7];
  if (!row) throw new Error("the read-back of an order placement returned no row");
  if (row.order !== null) return { status: 201, body: toOrder(row.order), location: `/store/orders/${row.order.id}`, replayed: false };
  // The key is held by another request (this batch's claim, had it failed to place the order, was released).
  if (row.key !== null) {
    const stored = existingResponse(row.key, fingerprint);
    return { status: 201, body: JSON.parse(stored.body) as Order, location: stored.headers.Location!, replayed: true };
  }
  if (row.petStatus === null) {
    throw new ApiError(422, "pet_not_found", `Pet ${petId} does not exist.`, [{ path: "body.petId", message: "No such pet." }]);
  }
  if (row.petStatus !== "available") throw new ApiError(409, "pet_not_available", `Pet ${petId} is ${row.petStatus}, not available.`);
  throw new ApiError(409, "insufficient_stock", `Only ${row.quantity} of pet ${petId} in stock; ${quantity} requested.`);
}
/**
 * The statements of a change of an order, built once per database: fulfilling
 * (`fulfil`) or rescheduling. Placeholders: `orderId`, `shipDate` (NULL: keep;
 * fulfilling: now), `version` (NULL without If-Match), `occurredAt` (now),
 * `accountId` (see `visibleTo`).
 */
function changeQueries(db: Database, fulfil: boolean) {
  const eventType: EventType = fulfil ? "order.fulfilled" : "order.updated";
  const orderOfPet = sql`(select ${orders.petId} from ${orders} where ${orders.id} = ${sql.placeholder("orderId")})`;
  return {
    /** Changes the order while it is open (and has the version checked); returns it as changed. */
    update: db
      .update(orders)
      .set({
        complete: fulfil,
        shipDate: fulfil
          ? sql`coalesce(${sql.placeholder("shipDate")}, ${orders.shipDate}, ${sql.placeholder("occurredAt")})`
          : sql`coalesce(${sql.placeholder("shipDate")}, ${orders.shipDate})`,
        version: sql`${orders.version} + 1`,
      })
      .where(
        and(
          eq(orders.id, sql.placeholder("orderId")),
          sql`${orders.complete} = 0`,
          sql`(${sql.placeholder("version")} is null or ${orders.version} = ${sql.placeholder("version")})`,
        ),
      )
      .returning(orderColumns)
      .prepare(),
    orderEvent: db
      .insert(events)
      .select(
        db
          .select(eventColumns(eventType, orderData))
          .from(orders)
          .where(and(eq(orders.id, sql.placeholder("orderId")), sql`changes() = 1`)),
      )
      .prepare(),
    /** Fulfilling: the pet is sold when its stock is 0 and no other order is open. */
    petSold: db
      .update(pets)
      .set({ status: "sold", version: sql`${pets.version} + 1` })
      .where(
        and(
          sql`${pets.id} = ${orderOfPet}`,
          sql`${pets.status} <> 'sold'`,
          sql`changes() = 1`,
          sql`(select ${inventory.quantity} from ${inventory} where ${inventory.petId} = ${pets.id}) = 0`,
          sql`not exists (select 1 from ${orders} where ${orders.petId} = ${pets.id} and ${orders.complete} = 0)`,
        ),
      )
      .prepare(),
    petEvent: db.insert(events).select(petUpdatedIfChanged(db, orderOfPet)).prepare(),
    /** What the order is now, if the caller may see it: why a change was refused. */
    state: db
      .select({ complete: orders.complete })
      .from(orders)
      .where(and(eq(orders.id, sql.placeholder("orderId")), visibleTo(orders.accountId)))
      .prepare(),
  };
}

const fulfilQueries = perDatabase((db) => changeQueries(db, true));
const rescheduleQueries = perDatabase((db) => changeQueries(db, false));

/**
 * Change an order (staff): `complete: true` fulfils it (shipDate defaults to now;
 * the pet becomes sold when its stock is 0 and no other order is open),
 * `shipDate` reschedules an open order. One batch, after a read only for If-Match.
 * @throws ApiError 404, 409 `order_complete`, 412 `precondition_failed`.
 */
export async function updateOrder(
  db: Database,
  principal: Principal,
  orderId: number,
  change: { shipDate?: string; complete?: boolean },
  ifMatch: string | undefined,
  now: Date,
): Promise<Order> {
  const version = await versionMatching(db, principal, orderId, ifMatch);
  const values = { orderId, shipDate: change.shipDate ?? null, version, occurredAt: now.toISOString(), accountId: viewer(principal) };
  let updated: OrderRow[];
  let state: { complete: boolean }[];
  if (change.complete === true) {
    const q = fulfilQueries(db);
    [updated, , , , state] = await writeBatch(db, [
      step(q.update, values),
      step(q.orderEvent, values),
      step(q.petSold, values),
      step(q.petEvent, values),
      step(q.state, values),
    ] as const);
  } else {
    const q = rescheduleQueries(db);
    [updated, , state] = await writeBatch(db, [step(q.update, values), step(q.orderEvent, values), step(q.state, values)] as const);
  }
  const [order] = updated;
  if (order) return toOrder(order);
  const [current] = state;
  if (!current) throw notFound("Order", orderId);
  if (current.complete) throw new ApiError(409, "order_complete", `Order ${orderId} is already fulfilled and cannot change.`);
  throw new ApiError(412, "precondition_failed", "The order changed meanwhile; fetch it again.");
}

/**
 * The statements of a cancellation, built once per database, every one
 * guarded by `cancellable` on the order row, which is deleted last.
 * Placeholders: `orderId`, `version` (NULL without If-Match), `accountId`
 * (see `visibleTo`), `occurredAt` (now).
 */
const cancelQueries = perDatabase((db) => {
  const o = alias(orders, "o");
  /** The order is open, the caller's to see, and (with If-Match) at the version checked. */
  const cancellable = exists(
    db
      .select({ one: sql`1` })
      .from(o)
      .where(
        and(
          eq(o.id, sql.placeholder("orderId")),
          sql`${o.complete} = 0`,
          visibleTo(o.accountId),
          sql`(${sql.placeholder("version")} is null or ${o.version} = ${sql.placeholder("version")})`,
        ),
      ),
  );
  const petOfOrder = sql`(select ${orders.petId} from ${orders} where ${orders.id} = ${sql.placeholder("orderId")})`;
  return {
    /** The order's quantity returns to stock. */
    restock: db
      .update(inventory)
      .set({
        quantity: sql`${inventory.quantity} + (select ${orders.quantity} from ${orders} where ${orders.id} = ${sql.placeholder("orderId")})`,
        version: sql`${inventory.version} + 1`,
      })
      .where(and(sql`${inventory.petId} = ${petOfOrder}`, cancellable))
      .prepare(),
    /** A pending pet becomes available again. */
    petAvailable: db
      .update(pets)
      .set({ status: "available", version: sql`${pets.version} + 1` })
      .where(and(sql`${pets.id} = ${petOfOrder}`, sql`${pets.status} = 'pending'`, cancellable))
      .prepare(),
    /**
     * The events, in this order: `pet.updated` (when the pet became available,
     * the statement before), `inventory.updated`, `order.cancelled`; one
     * statement, as in `placeQueries.events`.
     */
    events: db
      .insert(events)
      .select(
        unionAll(
          petUpdatedIfChanged(db, petOfOrder),
          inventoryUpdatedWhen(db, petOfOrder, cancellable),
          db
            .select(eventColumns("order.cancelled", orderData))
            .from(orders)
            .where(and(eq(orders.id, sql.placeholder("orderId")), cancellable)),
        ),
      )
      .prepare(),
    deleteOrder: db
      .delete(orders)
      .where(and(eq(orders.id, sql.placeholder("orderId")), cancellable))
      .prepare(),
    /** What the order is now, if the caller may see it: why a cancellation was refused. */
    state: db
      .select({ complete: orders.complete })
      .from(orders)
      .where(and(eq(orders.id, sql.placeholder("orderId")), visibleTo(orders.accountId)))
      .prepare(),
  };
});

/**
 * Cancel (delete) an open order: its quantity returns to stock and a pending
 * pet becomes available again. Every statement is guarded by the same
 * condition on the order row, which is deleted last. One batch, after a read only for If-Match.
 * @throws ApiError 404 (absent or another customer's), 409 `order_complete`, 412.
 */
export async function cancelOrder(db: Database, principal: Principal, orderId: number, ifMatch: string | undefined, now: Date): Promise<void> {
  const version = await versionMatching(db, principal, orderId, ifMatch);
  const values = { orderId, version, accountId: viewer(principal), occurredAt: now.toISOString() };
  const q = cancelQueries(db);
  const [, , , deleted, state] = await writeBatch(db, [
    step(q.restock, values),
    step(q.petAvailable, values),
    step(q.events, values),
    step(q.deleteOrder, values),
    step(q.state, values),
  ] as const);
  if (deleted.rowsAffected === 1) return;
  const [current] = state;
  if (!current) throw notFound("Order", orderId);
  if (current.complete) throw new ApiError(409, "order_complete", `Order ${orderId} is fulfilled and cannot be cancelled.`);
  throw new ApiError(412, "precondition_failed", "The order changed meanwhile; fetch it again.");
}
