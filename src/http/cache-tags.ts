/** Cache tags of public reads, and those a committed change makes stale (docs/caching.md#tags); printable ASCII, as Workers Cache requires. */
import type { CommittedEvent } from "../db/client";

export const PETS_LIST_TAG = "pets";
export const INVENTORY_LIST_TAG = "inventory";
export const CATEGORIES_LIST_TAG = "categories";

/** `pet:<id>`: the Pet representation of one pet. */
export const petTag = (petId: number): string => `pet:${petId}`;
/** `inventory:<petId>`: the InventoryItem of one pet. */
export const inventoryTag = (petId: number): string => `inventory:${petId}`;
/** `category:<id>`: the Category representation of one category. */
export const categoryTag = (categoryId: number): string => `category:${categoryId}`;

/** The tags made stale by committed changes (docs/caching.md#tags), deduplicated, in first-seen order. */
export function tagsToPurge(changes: readonly CommittedEvent[]): string[] {
  const tags = new Set<string>();
  for (const { type, data } of changes) {
    const [resource, action] = type.split(".");
    if (resource === "pet") {
      const id = Number(data.id);
      tags.add(petTag(id)).add(inventoryTag(id)).add(PETS_LIST_TAG).add(INVENTORY_LIST_TAG);
    } else if (resource === "inventory") {
      tags.add(inventoryTag(Number(data.petId)));
    } else if (resource === "category") {
      tags.add(categoryTag(Number(data.id)));
      if (action !== "updated") tags.add(CATEGORIES_LIST_TAG);
    }
  }
  return [...tags];
}

/** Whether a tag names inventory (`inventory`, `inventory:<petId>`): short-lived at the edge, never purged there. */
export function isShortLivedAtEdge(tag: string): boolean {
  return tag === INVENTORY_LIST_TAG || tag.startsWith(`${INVENTORY_LIST_TAG}:`);
}

/** The tags the edge purges (the catalogue: pets and categories), out of `tagsToPurge`'s, in order. */
export function edgePurgeTags(tags: readonly string[]): string[] {
  return tags.filter((tag) => !isShortLivedAtEdge(tag));
}
