/** Reading orders (docs/api.md#authorisation): a page of those the caller may see (a customer their own, staff all), and one by id. */
import { and, eq, gt } from "drizzle-orm";
import { type Database, qb } from "../../db/client";
import { execute, params } from "../../db/plan";
import { ORDER, type Order, orders } from "../../db/schema";
import { variants } from "../../db/variants";
import type { Principal } from "../../domain/principal";
import { readOrder } from "./shared";

const p = params<{ afterId: number; limit: number; accountId: number; petId: number | null; complete: boolean | null }>();
/** The list query per combination of filters (`accountId` for customers, `petId`, `complete`), each on its own index. */
const listQuery = variants((own: boolean, byPet: boolean, byComplete: boolean) =>
  p.prepare(
    qb
      .select(ORDER.columns)
      .from(orders)
      .where(
        and(
          gt(orders.id, p("afterId")),
          own ? eq(orders.accountId, p("accountId")) : undefined,
          byPet ? eq(orders.petId, p("petId")) : undefined,
          byComplete ? eq(orders.complete, p("complete")) : undefined,
        ),
      )
      .orderBy(orders.id)
      .limit(p("limit")),
  ),
);

/** A page request: orders with id > `afterId`, at most `limit` of them. */
export interface OrderPage {
  filter: { petId?: number; complete?: boolean };
  afterId: number;
  limit: number;
}

/** Up to `limit` orders the caller may see, id > `afterId`, ascending. One round trip. */
export async function listOrders(db: Database, principal: Principal, { filter, afterId, limit }: OrderPage): Promise<Order[]> {
  const query = listQuery(principal.role !== "staff", filter.petId !== undefined, filter.complete !== undefined);
  const rows = await execute(db, query, { afterId, limit, accountId: principal.accountId, petId: filter.petId ?? null, complete: filter.complete ?? null });
  return rows.map(ORDER.present);
}

/** @throws NotFound when absent or not the caller's. One round trip. */
export async function getOrder(db: Database, principal: Principal, orderId: number): Promise<Order> {
  return (await readOrder(db, principal, orderId)).current;
}
