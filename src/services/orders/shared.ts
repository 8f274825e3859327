/** What the order use cases share: who may see an order (docs/api.md#authorisation), and reading one with its version for If-Match. */
import { and, eq, sql, type SQL } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import { type Database, qb } from "../../db/client";
import { execute, type Params, params } from "../../db/plan";
import { ORDER, type Order, orders } from "../../db/schema";
import { found } from "../../domain/errors";
import type { Principal } from "../../domain/principal";

/** "The caller may see the order" on `accountId` (of orders or an alias): `p`'s `accountId` is the customer's, NULL for staff. Lookups by id only. */
export function visibleTo<V extends { accountId: number | null }>(p: Params<V>, accountId: SQLiteColumn): SQL {
  return sql`(${p("accountId")} is null or ${accountId} = ${p("accountId")})`;
}

/** The value `accountId` of `visibleTo` for `principal`. */
export function viewer(principal: Principal): number | null {
  return principal.role === "staff" ? null : principal.accountId;
}

const p = params<{ orderId: number; accountId: number | null }>();
/** The order `orderId` with its version, if the caller (`accountId`, see `visibleTo`) may see it. */
const orderQuery = p.prepare(
  qb
    .select({ ...ORDER.columns, version: orders.version })
    .from(orders)
    .where(and(eq(orders.id, p("orderId")), visibleTo(p, orders.accountId))),
);

/** What the order `orderId` is now, if the caller may see it: why a change was refused. */
export const orderState = p.prepare(
  qb
    .select({ complete: orders.complete })
    .from(orders)
    .where(and(eq(orders.id, p("orderId")), visibleTo(p, orders.accountId))),
);

/** The order `orderId` and its version, as `principal` may see it. One round trip. @throws NotFound when absent or another customer's. */
export async function readOrder(db: Database, principal: Principal, orderId: number): Promise<{ current: Order; version: number }> {
  const { version, ...order } = found(await execute(db, orderQuery, { orderId, accountId: viewer(principal) }), "order", orderId);
  return { current: ORDER.present(order), version };
}
