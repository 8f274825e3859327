/** When webhook work is due (docs/webhooks.md#design): the lease of a claimed attempt, and how long finished deliveries are kept. */

/** Delivered and given-up deliveries are kept this long, ms (docs/api.md#events-and-webhooks: 7 days). */
export const DELIVERY_RETENTION_MS = 7 * 24 * 3600 * 1000;

/** Extra lease beyond the attempt timeout before a claimed attempt counts as lost, ms. */
const LEASE_MARGIN_MS = 30_000;

/** When an attempt claimed at `now` with a `timeoutMs` request timeout counts as lost (and is due again). */
export function leaseEnd(now: Date, timeoutMs: number): Date {
  return new Date(now.getTime() + timeoutMs + LEASE_MARGIN_MS);
}

/** Finished deliveries that finished before the returned instant are pruned at `now`. */
export function retentionStart(now: Date): Date {
  return new Date(now.getTime() - DELIVERY_RETENTION_MS);
}
