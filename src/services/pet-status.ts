/** The status transitions of pets set by PUT/PATCH (docs/api.md#stock-and-ordering): pure, from the current stock state. */
import { Conflict } from "../domain/errors";
import type { PetStatus } from "../domain/pets";

/** What the database must check and do for an allowed transition. */
export interface TransitionPlan {
  /** The SQL guard re-checked in the write batch (so concurrency cannot break the rule). */
  guard: "none" | "stock_positive" | "no_open_orders";
  /** Set inventory quantity to 0 (pet sold). */
  zeroStock: boolean;
}

/** Decide a status change `from` → `to` by `stock` (units still orderable, open orders). @throws Conflict `invalid_transition` when docs/api.md#stock-and-ordering forbids it. */
export function planTransition(from: PetStatus, to: PetStatus, stock: { quantity: number; openOrders: number }): TransitionPlan {
  if (from === to) return { guard: "none", zeroStock: false };
  if (from === "available" && to === "pending") return { guard: "none", zeroStock: false };
  if (to === "available") {
    // pending→available (release a hold) and sold→available (after a restock) both need stock.
    if (stock.quantity <= 0) throw new Conflict("invalid_transition", { from, to, reason: "no_stock" });
    return { guard: "stock_positive", zeroStock: false };
  }
  if (to === "sold") {
    if (stock.openOrders > 0) throw new Conflict("invalid_transition", { from, to, reason: "open_orders" });
    return { guard: "no_open_orders", zeroStock: true };
  }
  throw new Conflict("invalid_transition", { from, to, reason: "not_allowed" });
}
