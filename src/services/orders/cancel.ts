/** Cancelling an order (docs/api.md#stock-and-ordering): delete, restock, a pending pet available again, in one batch guarded by one condition. */
import { and, eq, exists, sql } from "drizzle-orm";
import { alias, unionAll } from "drizzle-orm/sqlite-core";
import { type Database, qb } from "../../db/client";
import { eventColumns, insertEventRows, inventoryUpdatedWhen, petUpdatedIfChanged } from "../../db/events";
import { outbox, params, plan, run, statement } from "../../db/plan";
import { inventory, ORDER, orders, pets } from "../../db/schema";
import { Conflict } from "../../domain/errors";
import { checkedVersion, type ConditionalWrite, refusal } from "../../domain/precondition";
import type { Principal } from "../../domain/principal";
import { orderState, readOrder, viewer, visibleTo } from "./shared";

/** The values of a cancellation: `version` NULL without If-Match, `accountId` as `visibleTo` has it. */
const p = params<{ orderId: number; version: number | null; accountId: number | null; occurredAt: string }>();
const o = alias(orders, "o");

/** The order is open, the caller's to see, and (with If-Match) at the version checked. */
const cancellable = exists(
  qb
    .select({ one: sql`1` })
    .from(o)
    .where(and(eq(o.id, p("orderId")), sql`${o.complete} = 0`, visibleTo(p, o.accountId), sql`(${p("version")} is null or ${o.version} = ${p("version")})`)),
);

const petOfOrder = sql`(select ${orders.petId} from ${orders} where ${orders.id} = ${p("orderId")})`;

const cancellation = plan({
  /** The order's quantity returns to stock. */
  restock: p.statement(
    qb
      .update(inventory)
      .set({
        quantity: sql`${inventory.quantity} + (select ${orders.quantity} from ${orders} where ${orders.id} = ${p("orderId")})`,
        version: sql`${inventory.version} + 1`,
      })
      .where(and(sql`${inventory.petId} = ${petOfOrder}`, cancellable)),
  ),
  /** A pending pet becomes available again. */
  available: p.statement(
    qb
      .update(pets)
      .set({ status: "available", version: sql`${pets.version} + 1` })
      .where(and(sql`${pets.id} = ${petOfOrder}`, sql`${pets.status} = 'pending'`, cancellable)),
  ),
  /** The events in this order: `pet.updated` (when the step before made the pet available), `inventory.updated`, `order.cancelled` (UNION ALL). */
  events: outbox(
    p.guarded((changed) =>
      insertEventRows(
        unionAll(
          petUpdatedIfChanged(p, petOfOrder, changed),
          inventoryUpdatedWhen(p, petOfOrder, cancellable),
          qb
            .select(eventColumns(p, "order.cancelled", ORDER.json()))
            .from(orders)
            .where(and(eq(orders.id, p("orderId")), cancellable)),
        ),
      ),
    ),
  ),
  deleted: p.statement(qb.delete(orders).where(and(eq(orders.id, p("orderId")), cancellable))),
  state: statement(orderState),
});

/** A cancellation: by whom, of which order, if it is as `expected` (If-Match), at what time. */
export interface Cancellation extends ConditionalWrite {
  principal: Principal;
  orderId: number;
}

/** Cancel (delete) an open order. @throws NotFound (absent or another customer's), Conflict `order_complete`, StaleVersion. */
export async function cancelOrder(db: Database, { principal, orderId, expected, now }: Cancellation): Promise<void> {
  const version = await checkedVersion(expected, "order", orderId, () => readOrder(db, principal, orderId));
  const { deleted, state } = await run(db, cancellation, { orderId, version, accountId: viewer(principal), occurredAt: now.toISOString() });
  if (deleted.rowsAffected === 1) return;
  throw refusal("order", orderId, state, (row) => row.complete && new Conflict("order_complete", { orderId, attempted: "cancel" }));
}
