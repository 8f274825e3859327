/** Changing an order (docs/api.md#stock-and-ordering): fulfilling or rescheduling an open one, in one batch. */
import { and, eq, sql } from "drizzle-orm";
import { type Database, qb } from "../../db/client";
import { insertEventRows, insertEvents, petUpdatedIfChanged } from "../../db/events";
import { outbox, params, plan, run, statement } from "../../db/plan";
import type { Patch } from "../../db/representation";
import { inventory, ORDER, type Order, orders, pets } from "../../db/schema";
import { Conflict } from "../../domain/errors";
import type { EventType } from "../../domain/events";
import { checkedVersion, type ConditionalWrite, refusal } from "../../domain/precondition";
import type { Principal } from "../../domain/principal";
import { orderState, readOrder, viewer } from "./shared";

/** The values of a change: `shipDate` (NULL: none) applies when `shipDateGiven` is 1; `version` NULL without If-Match; `accountId` as `visibleTo` has it. */
const p = params<{ orderId: number; shipDate: string | null; shipDateGiven: 0 | 1; version: number | null; occurredAt: string; accountId: number | null }>();
/** The ship date after the change (JSON Merge Patch, RFC 7396: a member given is set, `null` removes it). */
const patchedShipDate = sql`CASE WHEN ${p("shipDateGiven")} THEN ${p("shipDate")} ELSE ${orders.shipDate} END`;
/** Changes the order while it is open (at the version checked, with If-Match); returns it as changed. */
function updateOrder(fulfil: boolean) {
  return p.prepare(
    qb
      .update(orders)
      .set({
        complete: fulfil,
        shipDate: fulfil ? sql`coalesce(${patchedShipDate}, ${p("occurredAt")})` : patchedShipDate,
        version: sql`${orders.version} + 1`,
      })
      .where(and(eq(orders.id, p("orderId")), sql`${orders.complete} = 0`, sql`(${p("version")} is null or ${orders.version} = ${p("version")})`))
      .returning(ORDER.columns),
  );
}

/** The order's event (`type`), when the update just before changed it. */
function orderEvent(type: EventType) {
  return outbox(p.guarded((changed) => insertEvents(p, type, ORDER.json(), orders, and(eq(orders.id, p("orderId")), changed))));
}

const orderOfPet = sql`(select ${orders.petId} from ${orders} where ${orders.id} = ${p("orderId")})`;

/** Fulfilling: the order's pet is sold when the order changed, its stock is 0 and no other order is open. */
const fulfilment = plan({
  update: statement(updateOrder(true)),
  orderEvent: orderEvent("order.fulfilled"),
  sold: p.guarded((changed) =>
    qb
      .update(pets)
      .set({ status: "sold", version: sql`${pets.version} + 1` })
      .where(
        and(
          sql`${pets.id} = ${orderOfPet}`,
          sql`${pets.status} <> 'sold'`,
          changed,
          sql`(select ${inventory.quantity} from ${inventory} where ${inventory.petId} = ${pets.id}) = 0`,
          sql`not exists (select 1 from ${orders} where ${orders.petId} = ${pets.id} and ${orders.complete} = 0)`,
        ),
      ),
  ),
  petEvent: outbox(p.guarded((changed) => insertEventRows(petUpdatedIfChanged(p, orderOfPet, changed)))),
  state: statement(orderState),
});

const rescheduling = plan({
  update: statement(updateOrder(false)),
  orderEvent: orderEvent("order.updated"),
  state: statement(orderState),
});

/** A change of order `orderId` by `principal`, if it is as `expected` (If-Match), at `now`: `complete: true` fulfils it, `shipDate` reschedules it (`null` removes it). */
export interface ChangeRequest extends ConditionalWrite {
  principal: Principal;
  orderId: number;
  change: Pick<Patch<typeof ORDER>, "shipDate" | "complete">;
}

/** Change an order (staff): fulfil or reschedule it. @throws NotFound, Conflict `order_complete`, StaleVersion. */
export async function changeOrder(db: Database, { principal, orderId, change, expected, now }: ChangeRequest): Promise<Order> {
  const version = await checkedVersion(expected, "order", orderId, () => readOrder(db, principal, orderId));
  const values = {
    orderId,
    shipDate: change.shipDate ?? null,
    shipDateGiven: change.shipDate === undefined ? (0 as const) : (1 as const),
    version,
    occurredAt: now.toISOString(),
    accountId: viewer(principal),
  };
  const { update, state } = change.complete === true ? await run(db, fulfilment, values) : await run(db, rescheduling, values);
  const [order] = update;
  if (order) return ORDER.present(order);
  throw refusal("order", orderId, state, (row) => row.complete && new Conflict("order_complete", { orderId, attempted: "change" }));
}
