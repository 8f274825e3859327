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
 *      (transactional outbox, API.md §6); the idempotency row gets the response;
 *   4. read back what the caller needs to tell success, replay or the reason of a refusal.
 * SQLite runs a batch as one serialised write transaction, on the embedded file
 * and on sqld alike, so two batches can never both take the last unit.
 */
import type { InStatement, Row } from "@libsql/client";
import type { Database } from "../db/client";
import { eventInsert, INVENTORY_JSON, ORDER_JSON, PET_JSON, writeStatements } from "../db/batch";
import { ApiError, notFound } from "../lib/errors";
import { assertIfMatch } from "../lib/http-cache";
import type { Principal } from "../domain/principal";
import { claimStatement, existingResponse, KEY_COLUMNS, releaseStatement, requestFingerprint } from "./idempotency.service";

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

const ORDER_COLUMNS = "id, pet_id, quantity, ship_date, complete";

function toOrder(row: Row): Order {
  const order: Order = { id: Number(row.id), petId: Number(row.pet_id), quantity: Number(row.quantity), complete: Number(row.complete) === 1 };
  if (row.ship_date !== null && row.ship_date !== undefined) order.shipDate = String(row.ship_date);
  return order;
}

/** SQL condition "the caller may see order o" (staff: all; customers: their own). */
function visibleTo(principal: Principal): { sql: string; args: number[] } {
  return principal.role === "staff" ? { sql: "1", args: [] } : { sql: "o.account_id = ?", args: [principal.accountId] };
}

function randomToken(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Up to `limit` orders the caller may see, id > `afterId`, ascending. One round trip. */
export async function listOrders(db: Database, principal: Principal, filter: OrderFilter, afterId: number, limit: number): Promise<Order[]> {
  const visible = visibleTo(principal);
  const where = ["o.id > ?", visible.sql];
  const args: (number | string)[] = [afterId, ...visible.args];
  if (filter.petId !== undefined) {
    where.push("o.pet_id = ?");
    args.push(filter.petId);
  }
  if (filter.complete !== undefined) {
    where.push("o.complete = ?");
    args.push(filter.complete ? 1 : 0);
  }
  const rs = await db.$client.execute({
    sql: `SELECT ${ORDER_COLUMNS} FROM orders o WHERE ${where.join(" AND ")} ORDER BY o.id LIMIT ?`,
    args: [...args, limit],
  });
  return rs.rows.map(toOrder);
}

async function readOrder(db: Database, principal: Principal, orderId: number): Promise<{ order: Order; version: number }> {
  const visible = visibleTo(principal);
  const rs = await db.$client.execute({
    sql: `SELECT ${ORDER_COLUMNS}, version FROM orders o WHERE o.id = ? AND ${visible.sql}`,
    args: [orderId, ...visible.args],
  });
  // Another customer's order is 404, never 403 (API.md §2): its existence is not disclosed.
  if (!rs.rows[0]) throw notFound("Order", orderId);
  return { order: toOrder(rs.rows[0]), version: Number(rs.rows[0].version) };
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
 * Place an order for the caller, honouring `idempotencyKey` (API.md §4). One round trip.
 * @throws ApiError 409 `pet_not_available` | `insufficient_stock`, 422 `pet_not_found` | `idempotency_key_reused`.
 */
export async function placeOrder(db: Database, principal: Principal, input: NewOrder, idempotencyKey: string | undefined, now: Date): Promise<PlacedOrder> {
  const at = now.toISOString();
  const token = randomToken();
  const { petId, quantity } = input;
  const shipDate = input.shipDate ?? null;
  // Only an Idempotency-Key needs the request's fingerprint (of the validated body: shipDate in UTC).
  const fingerprint = idempotencyKey === undefined ? "" : await requestFingerprint("POST", "/store/orders", input);
  const ours = "EXISTS (SELECT 1 FROM orders WHERE placement_token = ?)";
  const statements: InStatement[] = [];
  if (idempotencyKey !== undefined) {
    statements.push(claimStatement(principal.accountId, idempotencyKey, "POST", "/store/orders", fingerprint, now));
  }
  const claimed = idempotencyKey !== undefined ? " AND changes() = 1" : "";
  statements.push(
    {
      sql: `UPDATE inventory SET quantity = quantity - ?, version = version + 1
            WHERE pet_id = ? AND quantity >= ? AND (SELECT status FROM pets WHERE id = ?) = 'available'${claimed}`,
      args: [quantity, petId, quantity, petId],
    },
    {
      sql: `INSERT INTO orders (pet_id, account_id, quantity, ship_date, complete, created_at, placement_token)
            SELECT ?, ?, ?, ?, 0, ?, ? WHERE changes() = 1`,
      args: [petId, principal.accountId, quantity, shipDate, at, token],
    },
    {
      sql: `UPDATE pets SET status = 'pending', version = version + 1
            WHERE id = ? AND status = 'available' AND (SELECT quantity FROM inventory WHERE pet_id = ?) = 0 AND ${ours}`,
      args: [petId, petId, token],
    },
    eventInsert("pet.updated", at, PET_JSON, "pets p WHERE p.id = ? AND changes() = 1", [petId]),
    eventInsert("order.placed", at, ORDER_JSON, "orders o WHERE o.placement_token = ?", [token]),
    eventInsert("inventory.updated", at, INVENTORY_JSON, `inventory i JOIN pets p ON p.id = i.pet_id WHERE i.pet_id = ? AND ${ours}`, [petId, token]),
  );
  if (idempotencyKey !== undefined) {
    statements.push(
      {
        sql: `UPDATE idempotency_keys SET response_status = 201,
                response_body = (SELECT ${ORDER_JSON} FROM orders o WHERE o.placement_token = ?),
                response_headers = (SELECT json_object('Location', '/store/orders/' || o.id) FROM orders o WHERE o.placement_token = ?)
              WHERE account_id = ? AND key = ? AND ${ours}`,
        args: [token, token, principal.accountId, idempotencyKey, token],
      },
      // A claim whose order was refused is released in the same transaction, so claims never outlive their batch.
      releaseStatement(principal.accountId, idempotencyKey),
    );
  }
  // One read-back row: the order placed by this batch (if any), the pet's state, and the remembered response.
  const readBackIndex = statements.length;
  statements.push({
    sql: `SELECT (SELECT ${ORDER_JSON} FROM orders o WHERE o.placement_token = ?) AS body,
                 (SELECT id FROM orders WHERE placement_token = ?) AS order_id,
                 (SELECT status FROM pets WHERE id = ?) AS pet_status,
                 (SELECT quantity FROM inventory WHERE pet_id = ?) AS quantity,
                 ${KEY_COLUMNS.split(", ")
                   .map((column) => `k.${column}`)
                   .join(", ")}
          FROM (SELECT 1) LEFT JOIN idempotency_keys k ON k.account_id = ? AND k.key = ?`,
    args: [token, token, petId, petId, principal.accountId, idempotencyKey ?? null],
  });
  const results = await writeStatements(db, statements);
  const row = results[readBackIndex]!.rows[0]!;
  if (row.order_id !== null) {
    return { status: 201, body: JSON.parse(String(row.body)) as Order, location: `/store/orders/${Number(row.order_id)}`, replayed: false };
  }
  // The key is held by another request (this batch's claim, had it failed to place the order, was released).
  if (idempotencyKey !== undefined && row.request_hash !== null) {
    const stored = existingResponse(row, fingerprint);
    return { status: 201, body: JSON.parse(stored.body) as Order, location: stored.headers.Location!, replayed: true };
  }
  if (row.pet_status === null) {
    throw new ApiError(422, "pet_not_found", `Pet ${petId} does not exist.`, [{ path: "body.petId", message: "No such pet." }]);
  }
  if (row.pet_status !== "available") throw new ApiError(409, "pet_not_available", `Pet ${petId} is ${String(row.pet_status)}, not available.`);
  throw new ApiError(409, "insufficient_stock", `Only ${Number(row.quantity)} of pet ${petId} in stock; ${quantity} requested.`);
}

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
  const at = now.toISOString();
  const version = await versionMatching(db, principal, orderId, ifMatch);
  const fulfil = change.complete === true;
  const open = "id = ? AND complete = 0 AND (? IS NULL OR version = ?)";
  const statements: InStatement[] = [
    {
      sql: `UPDATE orders SET complete = ?, ship_date = COALESCE(?, ${fulfil ? "ship_date, ?" : "ship_date"}), version = version + 1
            WHERE ${open} RETURNING ${ORDER_COLUMNS}`,
      args: fulfil ? [1, change.shipDate ?? null, at, orderId, version, version] : [0, change.shipDate ?? null, orderId, version, version],
    },
    eventInsert(fulfil ? "order.fulfilled" : "order.updated", at, ORDER_JSON, "orders o WHERE o.id = ? AND changes() = 1", [orderId]),
  ];
  if (fulfil) {
    statements.push(
      {
        sql: `UPDATE pets SET status = 'sold', version = version + 1
              WHERE id = (SELECT pet_id FROM orders WHERE id = ?) AND status <> 'sold' AND changes() = 1
                AND (SELECT quantity FROM inventory WHERE pet_id = pets.id) = 0
                AND NOT EXISTS (SELECT 1 FROM orders WHERE pet_id = pets.id AND complete = 0)`,
        args: [orderId],
      },
      eventInsert("pet.updated", at, PET_JSON, "pets p WHERE p.id = (SELECT pet_id FROM orders WHERE id = ?) AND changes() = 1", [orderId]),
    );
  }
  statements.push({
    sql: `SELECT complete, version FROM orders o WHERE o.id = ? AND ${visibleTo(principal).sql}`,
    args: [orderId, ...visibleTo(principal).args],
  });
  const results = await writeStatements(db, statements);
  const updated = results[0]!.rows[0];
  if (updated) return toOrder(updated);
  const row = results[results.length - 1]!.rows[0];
  if (!row) throw notFound("Order", orderId);
  if (Number(row.complete) === 1) throw new ApiError(409, "order_complete", `Order ${orderId} is already fulfilled and cannot change.`);
  throw new ApiError(412, "precondition_failed", "The order changed meanwhile; fetch it again.");
}

/**
 * Cancel (delete) an open order: its quantity returns to stock and a pending
 * pet becomes available again. Every statement is guarded by the same
 * condition on the order row, which is deleted last. One batch, after a read only for If-Match.
 * @throws ApiError 404 (absent or another customer's), 409 `order_complete`, 412.
 */
export async function cancelOrder(db: Database, principal: Principal, orderId: number, ifMatch: string | undefined, now: Date): Promise<void> {
  const at = now.toISOString();
  const version = await versionMatching(db, principal, orderId, ifMatch);
  const visible = visibleTo(principal);
  const cancellable = `EXISTS (SELECT 1 FROM orders o WHERE o.id = ? AND o.complete = 0 AND ${visible.sql} AND (? IS NULL OR o.version = ?))`;
  const cArgs = [orderId, ...visible.args, version, version];
  const petOfOrder = "(SELECT pet_id FROM orders WHERE id = ?)";
  const results = await writeStatements(db, [
    {
      sql: `UPDATE inventory SET quantity = quantity + (SELECT quantity FROM orders WHERE id = ?), version = version + 1
            WHERE pet_id = ${petOfOrder} AND ${cancellable}`,
      args: [orderId, orderId, ...cArgs],
    },
    {
      sql: `UPDATE pets SET status = 'available', version = version + 1 WHERE id = ${petOfOrder} AND status = 'pending' AND ${cancellable}`,
      args: [orderId, ...cArgs],
    },
    eventInsert("pet.updated", at, PET_JSON, `pets p WHERE p.id = ${petOfOrder} AND changes() = 1`, [orderId]),
    eventInsert("inventory.updated", at, INVENTORY_JSON, `inventory i JOIN pets p ON p.id = i.pet_id WHERE i.pet_id = ${petOfOrder} AND ${cancellable}`, [
      orderId,
      ...cArgs,
    ]),
    eventInsert("order.cancelled", at, ORDER_JSON, `orders o WHERE o.id = ? AND ${cancellable}`, [orderId, ...cArgs]),
    { sql: `DELETE FROM orders WHERE id = ? AND ${cancellable}`, args: [orderId, ...cArgs] },
    { sql: `SELECT o.complete FROM orders o WHERE o.id = ? AND ${visible.sql}`, args: [orderId, ...visible.args] },
  ]);
  if (results[5]!.rowsAffected === 1) return;
  const row = results[6]!.rows[0];
  if (!row) throw notFound("Order", orderId);
  if (Number(row.complete) === 1) throw new ApiError(409, "order_complete", `Order ${orderId} is fulfilled and cannot be cancelled.`);
  throw new ApiError(412, "precondition_failed", "The order changed meanwhile; fetch it again.");
}
