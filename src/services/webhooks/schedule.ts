/** How long finished deliveries are kept (docs/webhooks.md#design). */

/** Delivered and given-up deliveries are kept this long, ms (docs/api.md#events-and-webhooks: 7 days). */
export const DELIVERY_RETENTION_MS = 7 * 24 * 3600 * 1000;

/** Finished deliveries that finished before the returned instant are pruned at `now`. */
export function retentionStart(now: Date): Date {
  return new Date(now.getTime() - DELIVERY_RETENTION_MS);
}
