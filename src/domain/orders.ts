/** Orders (docs/api.md#resources, #stock-and-ordering): what an order is, what places one and what changes one. */

/** An order to place: `quantity` units of pet `petId`. */
export interface NewOrder {
  petId: number;
  quantity: number;
  shipDate?: string;
}

/** A change of an order: `complete: true` fulfils it, `shipDate` reschedules it (`null` removes it). */
export interface OrderChange {
  shipDate?: string | null;
  complete?: boolean;
}
