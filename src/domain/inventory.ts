/** Inventory (docs/api.md#resources, #stock-and-ordering): a pet's stock, with the pet's status. */
import type { PetStatus } from "./pets";

/** InventoryItem representation. */
export interface InventoryItem {
  petId: number;
  quantity: number;
  status: PetStatus;
}
