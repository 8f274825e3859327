/**
 * Several server processes on one port (node:cluster, https://nodejs.org/api/cluster.html): the primary forks WEB_CONCURRENCY workers, relays
 * read-cache purges between them, replaces one that exits while serving and stops them all on SIGTERM/SIGINT (docs/operations.md#several-server-processes).
 */
import cluster, { type Worker } from "node:cluster";
import { type ClusterMetrics, serveClusterMetrics } from "./cluster-metrics";

/** Messages between the primary and its workers. */
type Message = { petstore: "listening" } | { petstore: "failed"; message: string } | { petstore: "purge"; tags: string[] };

const isMessage = (value: unknown): value is Message => typeof value === "object" && value !== null && "petstore" in value;

/** A purge the other side can no longer receive (its channel closed as it exits) is moot. */
const ignoreSendError = () => {};

/**
 * Run the primary: fork `processes` workers (this same script) and supervise them until SIGTERM/SIGINT. `afterStop` runs once all have
 * exited after such a stop (errors printed); `metrics`: where every process's metrics are served (one that cannot be bound stops the start).
 */
export function runPrimary(processes: number, options: { afterStop?: () => Promise<void>; metrics?: { host: string; port: number } } = {}): void {
  /** The server processes by slot: a replacement is forked after its predecessor has left. */
  const workers = new Map<number, Worker>();
  let metrics: ClusterMetrics | undefined;
  let stopping = false;
  /** A server process's stop failed (its own lines say which step), or the primary's last step did: the stop exits 1. */
  let unclean = false;

  const exit = (code: number) => {
    // Only after a stop: a failed start ends with the worker's one line, nothing more.
    if (code !== 0 || !options.afterStop) process.exit(code || Number(unclean));
    void options
      .afterStop()
      .catch((error: unknown) => {
        unclean = true;
        console.error(`stop: closing the database after the server processes failed: ${error instanceof Error ? error.message : String(error)}`);
      })
      .finally(() => process.exit(code || Number(unclean)));
  };

  const stopAll = (code: number) => {
    if (stopping) return;
    stopping = true;
    if (workers.size === 0) return exit(code);
    for (const worker of workers.values()) worker.process.kill("SIGTERM");
    // A worker stuck in its shutdown is ended by its own 10 s timer; this is the primary's.
    setTimeout(() => process.exit(1), 15_000).unref();
    process.exitCode = code;
  };

  // Each process keeps its slot (0 … processes − 1) across replacements: its metrics' `petstore_process` label (docs/operations.md#metrics).
  const fork = (slot: number) => {
    const worker = cluster.fork();
    workers.set(slot, worker);
    let ready = false;
    worker.on("message", (message: unknown) => {
      if (!isMessage(message)) return;
      if (message.petstore === "listening") {
        ready = true;
      } else if (message.petstore === "failed") {
        if (!stopping) console.error(message.message);
        stopAll(1);
      } else if (message.petstore === "purge") {
        // A process on its way out (its cache goes with it) may fail the send: with a callback, that is no 'error' event ending the primary.
        for (const other of workers.values()) if (other !== worker && other.isConnected()) other.send(message, ignoreSendError);
      }
    });
    worker.on("exit", (code, signal) => {
      workers.delete(slot);
      if (stopping) {
        // Ended by the stop's own SIGTERM while still loading (before its stop was armed, src/server.ts): nothing was open or accepted.
        unclean ||= code !== 0 && !(signal === "SIGTERM" && !ready);
        if (workers.size === 0) exit(Number(process.exitCode ?? 0));
        return;
      }
      if (!ready) {
        // It died while starting: the others would only fail the same way.
        console.error(`server process ${worker.process.pid} exited while starting (${signal ?? code})`);
        stopAll(1);
        return;
      }
      console.error(`server process ${worker.process.pid} exited (${signal ?? code}); starting another`);
      metrics?.restarted(slot);
      fork(slot);
    });
  };

  const served = options.metrics ? serveClusterMetrics(options.metrics, processes, () => workers) : Promise.resolve(undefined);
  served.then(
    (started) => {
      metrics = started;
      for (let slot = 0; slot < processes; slot++) fork(slot);
    },
    (error: Error) => {
      console.error(error.message);
      process.exit(1);
    },
  );
  const shutdown = (signal: string) => {
    if (stopping) return;
    console.log(`${signal}: closing ${workers.size} server processes`);
    stopAll(0);
  };
  for (const signal of ["SIGTERM", "SIGINT"]) process.on(signal, () => shutdown(signal));
}

/** In a worker: tell the primary that this process listens. No-op outside a cluster. */
export function announceListening(): void {
  if (cluster.isWorker) process.send?.({ petstore: "listening" } satisfies Message);
}

/** In a worker: hand a start error to the primary, which prints it once and stops the others; then exit 1. */
export function reportStartFailure(message: string): void {
  process.send?.({ petstore: "failed", message } satisfies Message, () => process.exit(1));
}

/** Read-cache purges shared with the other workers (src/runtime/node/memory-read-cache.ts `peers`); undefined outside a cluster. */
export function clusterPurges(): { publish(tags: string[]): void; subscribe(onPurge: (tags: string[]) => void): void } | undefined {
  if (!cluster.isWorker) return undefined;
  return {
    publish: (tags) => process.send?.({ petstore: "purge", tags } satisfies Message, ignoreSendError),
    subscribe: (onPurge) =>
      process.on("message", (message: unknown) => {
        if (isMessage(message) && message.petstore === "purge") onPurge(message.tags);
      }),
  };
}
