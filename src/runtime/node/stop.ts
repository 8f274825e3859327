/** The Node server's stop, step by step (docs/operations.md#stopping): each step attempted, each failure named, one verdict. */

/** One step of a stop: what it does, in words a log line can name ("closing the database"), and the doing. */
export interface StopStep {
  name: string;
  stop: () => unknown;
}

/**
 * Run `steps` one after another, each whatever the ones before it did (a failed dispatch stop still closes the database), writing
 * `stop: <name> failed: <message>` to `report` (default: stderr) for each failure, and `onStep` the step now running.
 * @returns true when every step succeeded (the stop was clean: exit 0), else false.
 */
export async function stopInOrder(
  steps: readonly StopStep[],
  report: (line: string) => void = console.error,
  onStep: (name: string) => void = () => {},
): Promise<boolean> {
  let clean = true;
  for (const { name, stop } of steps) {
    onStep(name);
    try {
      await stop();
    } catch (error) {
      clean = false;
      report(`stop: ${name} failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return clean;
}
