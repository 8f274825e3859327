/** The one retry backoff of the project: webhook attempts, lock waits, a saturated database server. */

/** Delay in ms after attempt `attempt` (1-based) failed: `min(capMs, baseMs * 2^(attempt-1))`, equal jitter (https://aws.amazon.com/blogs/architecture/exponential-backoff-and-jitter/). */
export function backoffDelayMs(attempt: number, baseMs: number, capMs: number, random: () => number = Math.random): number {
  const nominal = Math.min(capMs, baseMs * 2 ** Math.min(Math.max(attempt - 1, 0), 40));
  return Math.round(nominal / 2 + random() * (nominal / 2));
}
