/** Pet statuses (docs/api.md#stock-and-ordering): the one truth of a pet's availability, shown on Pet and InventoryItem. */
export const PET_STATUSES = ["available", "pending", "sold"] as const;
export type PetStatus = (typeof PET_STATUSES)[number];
