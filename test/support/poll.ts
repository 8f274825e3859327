/** Waiting on a condition that another process, a server or a run in flight makes true. */

/** Resolves once `condition()` holds (checked every 10 ms). */
export async function until(condition: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await condition())) await new Promise((resolve) => setTimeout(resolve, 10));
}
