/**
 * The load generator of `npm run bench`: autocannon from this process
 * against one server, or against several in turns, with the server's CPU
 * time read before and after (bench/cpu.ts). One row per server.
 */
import autocannon, { type Request as AutocannonRequest } from "autocannon";
import { cpuUs } from "./cpu";

/** Builds each request of a scenario from autocannon's template. */
export type Setup = (req: AutocannonRequest) => AutocannonRequest;

/** One row of the report. */
export interface Result {
  scenario: string;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
  /** Server CPU (user + system) per request served, µs: the server process, or the sum of the Worker's workerd processes. */
  cpuUsPerRequest?: number;
  ratioToBaseline?: number;
  /** Worker rows: the floor Worker this row is compared with (the table computes the ratio). */
  floor?: string;
  /** Worker rows: the same floor deployed without the Worker's settings (a second ratio). */
  plainFloor?: string;
}

/** One autocannon run against one server: raw counts, merged by `resultOf`. */
export interface Sample {
  requests: number;
  seconds: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
  /** CPU µs of the server's processes over the run, undefined without processes. */
  cpuUs?: number;
}

export interface DriveOptions {
  /** Seconds to drive (default: the run's duration). */
  seconds?: number;
  /** The processes whose CPU time serves the requests (read before and after the run). */
  cpuPids?: () => number[];
}

/** A server driven in turns: its row name, port and the processes whose CPU serves it. */
export interface Turn {
  name: string;
  port: number;
  pids: number[];
}

/** How hard and how long: the run's `--connections`, `--duration` and `--warmup`. */
export interface Load {
  connections: number;
  duration: number;
  warmup: number;
}

/** Rounds of `driveInTurns`: each server gets `duration` seconds in this many slices. */
const TURNS = 5;

/** The row of `samples` (one or more runs of one server): totals over their time; p50 request-weighted, p99 the worst. */
export function resultOf(name: string, samples: readonly Sample[]): Result {
  const requests = samples.reduce((n, x) => n + x.requests, 0);
  const seconds = samples.reduce((n, x) => n + x.seconds, 0);
  const cpu = samples.every((x) => x.cpuUs !== undefined) ? samples.reduce((n, x) => n + x.cpuUs!, 0) : undefined;
  return {
    scenario: name,
    requestsPerSecond: Math.round(requests / seconds),
    p50Ms: requests > 0 ? Math.round(samples.reduce((n, x) => n + x.p50Ms * x.requests, 0) / requests) : 0,
    p99Ms: Math.max(...samples.map((x) => x.p99Ms)),
    non2xx: samples.reduce((n, x) => n + x.non2xx, 0),
    errors: samples.reduce((n, x) => n + x.errors, 0),
    cpuUsPerRequest: cpu !== undefined && requests > 0 ? Math.round(cpu / requests) : undefined,
  };
}

/** The three ways to drive a server under `load`. */
export function createDriver(load: Load) {
  const sample = async (port: number, setup: Setup, seconds: number, pids: readonly number[]): Promise<Sample> => {
    const cpuBefore = cpuUs(pids);
    const { connections } = load;
    const result = await autocannon({ url: `http://127.0.0.1:${port}`, connections, duration: seconds, requests: [{ setupRequest: setup as never }] });
    return {
      requests: result.requests.total,
      seconds: result.duration,
      p50Ms: result.latency.p50,
      p99Ms: result.latency.p99,
      non2xx: result.non2xx,
      errors: result.errors + result.timeouts,
      cpuUs: pids.length > 0 ? cpuUs(pids) - cpuBefore : undefined,
    };
  };

  /** One row: the server on `port` driven with `setup` for the run's duration (or `options.seconds`). */
  const drive = async (name: string, port: number, setup: Setup, options: DriveOptions = {}): Promise<Result> =>
    resultOf(name, [await sample(port, setup, options.seconds ?? load.duration, options.cpuPids?.() ?? [])]);

  return {
    drive,
    /**
     * Drive `turns` with the same requests in alternation: TURNS rounds, each
     * giving every server one slice of duration/TURNS seconds, so that a change
     * of the machine's load during the run falls on all of them alike. One row each.
     */
    async driveInTurns(turns: readonly Turn[], setup: Setup): Promise<Result[]> {
      const slice = Math.max(1, Math.round(load.duration / TURNS));
      const samples = turns.map(() => [] as Sample[]);
      for (let round = 0; round < TURNS; round++) {
        for (const [i, turn] of turns.entries()) samples[i]!.push(await sample(turn.port, setup, slice, turn.pids));
      }
      return turns.map((turn, i) => resultOf(turn.name, samples[i]!));
    },
    /** Warm-up: an unmeasured run of `--warmup` seconds (JIT, module loading, caches). */
    warm: (port: number, setup: Setup) => drive("warm-up", port, setup, { seconds: load.warmup }),
  };
}

export type Driver = ReturnType<typeof createDriver>;
