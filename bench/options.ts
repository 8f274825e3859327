/**
 * The command line of `npm run bench` (bench/run.ts): its flags and
 * defaults, the text `--help` prints, and which scenarios a `--scenarios`
 * list selects. What each flag does is explained in bench/README.md.
 */
import { parseArgs } from "node:util";

/** One run's settings, parsed and checked. */
export interface BenchOptions {
  /** Seconds each scenario is driven. */
  duration: number;
  /** Concurrent connections of the load generator. */
  connections: number;
  /** Seconds of unmeasured load before the baseline, each read scenario, the mix and each Worker. */
  warmup: number;
  /** `--scenarios` entries (substrings, or `=name` for one name exactly); empty: the default selection. */
  scenarios: string[];
  /** Pets in the seeded catalogue, at least. */
  pets: number;
  /** Run the `sqld:` rows. */
  sqld: boolean;
  /** Run the engine rows. */
  engine: boolean;
  /** Folder for V8 CPU profiles (`--cpu-prof`), or undefined. */
  cpuProf?: string;
  /** Run only the database bill. */
  rows: boolean;
  /** Print the usage text and stop. */
  help: boolean;
}

export const USAGE = `Usage: npm run bench -- [flags]

  --duration S       seconds each scenario is driven (default 10)
  --connections N    concurrent connections of the load generator (default 50)
  --warmup S         seconds of unmeasured load before the baseline, each read
                     scenario, the mix and each Worker (default 3)
  --scenarios A,B    only the scenarios whose name contains A or B; =NAME
                     selects NAME exactly, e.g. --scenarios worker or
                     --scenarios "=GET /pets/{petId},mixed"
  --pets N           pets in the seeded catalogue, at least (default 1000)
  --sqld false       skip the "sqld:" rows (the Node server on sqld)
  --engine false     skip the engine rows (an order's statements, no HTTP)
  --cpu-prof DIR     write V8 CPU profiles of the Node server and of each
                     "worker:" row into DIR (npm run profile:summary reads them)
  --rows             only the database bill (rows read and written)
  --help             this text`;

/** `value` as a number of at least `min`; throws naming the flag otherwise. */
function numberFlag(flag: string, value: string, min: number): number {
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n) || n < min) throw new Error(`--${flag}: expected a number ≥ ${min}, got "${value}"`);
  return n;
}

/** `value` as a boolean written `true` or `false`; throws naming the flag otherwise. */
function booleanFlag(flag: string, value: string): boolean {
  if (value !== "true" && value !== "false") throw new Error(`--${flag}: expected true or false, got "${value}"`);
  return value === "true";
}

/**
 * The options of `argv` (the arguments after `npm run bench --`).
 * @throws on an unknown flag, a positional argument or a value out of range.
 */
export function parseOptions(argv: readonly string[]): BenchOptions {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    options: {
      duration: { type: "string", default: "10" },
      connections: { type: "string", default: "50" },
      warmup: { type: "string", default: "3" },
      scenarios: { type: "string", default: "" },
      pets: { type: "string", default: "1000" },
      sqld: { type: "string", default: "true" },
      engine: { type: "string", default: "true" },
      "cpu-prof": { type: "string", default: "" },
      rows: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  return {
    duration: numberFlag("duration", values.duration, 1),
    connections: Math.round(numberFlag("connections", values.connections, 1)),
    warmup: numberFlag("warmup", values.warmup, 0),
    scenarios: values.scenarios
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean),
    pets: Math.round(numberFlag("pets", values.pets, 0)),
    sqld: booleanFlag("sqld", values.sqld),
    engine: booleanFlag("engine", values.engine),
    cpuProf: values["cpu-prof"] || undefined,
    rows: values.rows,
    help: values.help,
  };
}

/** True when scenario `name` is selected: a listed string occurs in it, or equals it when written `=name`. */
export const selected = (name: string, wanted: readonly string[]) => wanted.some((w) => (w.startsWith("=") ? name === w.slice(1) : name.includes(w)));
