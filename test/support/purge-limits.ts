/** Numbers the purge-budget test checks the scheduler's policy and the edge headers against (docs/caching.md#limits-we-design-for). */
import type { PurgeBudget } from "../../src/runtime/workers/purge-budget";

/** Cloudflare's Free-tier purge limits (the purge-cache page's table). */
export const FREE_TIER_PURGE_LIMITS: PurgeBudget = { perMinute: 5, burst: 25, maxTags: 100 };

/** Worst-case staleness after a write, ms: the table of docs/caching.md#staleness-after-a-write-worst-case, where each bound is derived. */
export const STALENESS_BOUNDS_MS = {
  catalogue: 15_000,
  catalogueReadInFlight: 25_000,
  // The catalogue's edge lifetime (EDGE_CACHE_CONTROL: max-age=30 + stale-while-revalidate=60).
  catalogueWithoutPurge: 90_000,
  catalogueOnError: 330_000,
  inventory: 10_000,
  inventoryOnError: 65_000,
};
