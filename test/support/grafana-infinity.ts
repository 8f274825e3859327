/**
 * A panel of docs/monitoring/workers-dashboard.json run the way Grafana and its Infinity data source run it, for the parts the
 * dashboard uses: Infinity's macros and the dashboard's variables in the URL and body
 * (https://grafana.com/docs/plugins/yesoreyeram-infinity-datasource/latest/query/macros/), a POST with the data source's bearer token,
 * the JQ parser (https://grafana.com/docs/plugins/yesoreyeram-infinity-datasource/latest/query/jq-backend/: here the `jq` program on
 * PATH; Infinity embeds gojq, which reads these programs alike), the columns and the long-to-wide step of the time series format, then
 * Grafana's transformations joinByField and calculateField (reduceRow, binary).
 */
import { spawnSync } from "node:child_process";

/** A frame's field: time (ms), number or string values, and the labels long-to-wide gave it. */
export interface Field {
  name: string;
  type: "time" | "number" | "string";
  values: (number | string | null)[];
  labels?: Record<string, string>;
}

export interface Frame {
  fields: Field[];
}

/** The members of an Infinity target and a panel that are run here. */
export interface Target {
  refId: string;
  url: string;
  url_options: { method: string; body_content_type: string; data: string };
  root_selector: string;
  columns: { selector: string; text: string; type: string }[];
}

export interface RunnablePanel {
  title: string;
  targets: Target[];
  transformations?: { id: string; options: Record<string, unknown> }[];
}

/** Where and when a panel runs: the dashboard's variables, the time range (ms), the data source's base URL and token. */
export interface PanelRun {
  variables: Record<string, string>;
  range: { from: number; to: number };
  /** Replaces the URLs' `https://api.cloudflare.com/client/v4` (the fake API). */
  apiBaseUrl: string;
  token: string;
}

/**
 * `text` with Infinity's macros replaced as its pkg/models/macros.go does (`$__customInterval(d1,v1,…,default)`: the first value whose
 * duration the range does not exceed), then its time macros (`${__timeFrom}`, `${__timeTo}` in ms), then the dashboard's variables.
 */
export function interpolate(text: string, run: Pick<PanelRun, "variables" | "range">): string {
  const rangeMs = run.range.to - run.range.from;
  const ms = (duration: string) => Number(duration.slice(0, -1)) * { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[duration.at(-1) as "s"];
  const custom = text.replace(/\$__customInterval\((.*?)\)/g, (_, list: string) => {
    const args = list.split(",");
    for (let i = 1; i < args.length; i += 2) if (rangeMs <= ms(args[i - 1]!)) return args[i]!;
    return args.at(-1)!;
  });
  const times: Record<string, string> = { __timeFrom: String(run.range.from), __timeTo: String(run.range.to) };
  return custom.replace(/\$\{([\w.]+)\}/g, (whole, name: string) => times[name] ?? run.variables[name] ?? whole);
}

/** What Infinity's JQ parser makes of `program` on `input`: its outputs, or the one array it outputs. @throws Error when jq fails. */
export function runJq(program: string, input: unknown): unknown[] {
  const jq = spawnSync("jq", ["-c", program], { input: JSON.stringify(input), encoding: "utf8" });
  if (jq.error) throw new Error(`jq is needed on PATH (apt-get install jq): ${jq.error.message}`);
  if (jq.status !== 0) throw new Error(`jq failed on ${program}: ${jq.stderr}`);
  const outputs = jq.stdout
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as unknown);
  return outputs.length === 1 && Array.isArray(outputs[0]) ? outputs[0] : outputs;
}

/** The rows as a frame of the target's columns, typed as Infinity types them (`timestamp` an ISO text, `timestamp_epoch` ms). */
function frameOf(rows: unknown[], columns: Target["columns"]): Frame {
  const typed = (type: string, value: unknown): number | string | null => {
    if (value === null || value === undefined) return null;
    if (type === "timestamp") return Date.parse(String(value));
    if (type === "string") return String(value);
    return Number(value);
  };
  const kind = (type: string): Field["type"] => (type.startsWith("timestamp") ? "time" : type === "string" ? "string" : "number");
  return {
    fields: columns.map((c) => ({ name: c.text, type: kind(c.type), values: rows.map((row) => typed(c.type, (row as Record<string, unknown>)[c.selector])) })),
  };
}

/** A long frame (string fields beside time and numbers) made wide: one number field per number and combination of strings (labels). */
function longToWide(frame: Frame): Frame {
  const time = frame.fields.find((f) => f.type === "time")!;
  const strings = frame.fields.filter((f) => f.type === "string");
  if (strings.length === 0) return frame;
  const times = [...new Set(time.values as number[])].sort((a, b) => a - b);
  const wide = new Map<string, Field>();
  time.values.forEach((t, row) => {
    const labels = Object.fromEntries(strings.map((s) => [s.name, String(s.values[row])]));
    for (const number of frame.fields.filter((f) => f.type === "number")) {
      const key = JSON.stringify([number.name, labels]);
      const field = wide.get(key) ?? { name: number.name, type: "number", labels, values: times.map(() => null) };
      field.values[times.indexOf(t as number)] = number.values[row]!;
      wide.set(key, field);
    }
  });
  return { fields: [{ ...time, values: times }, ...wide.values()] };
}

/** One target's frame: the request Infinity sends, the answer's status checked, jq, columns, long to wide. @throws Error unless 200. */
async function runTarget(target: Target, run: PanelRun): Promise<Frame> {
  const url = interpolate(target.url, run).replace("https://api.cloudflare.com/client/v4", run.apiBaseUrl);
  const response = await fetch(url, {
    method: target.url_options.method,
    headers: { authorization: `Bearer ${run.token}`, "content-type": target.url_options.body_content_type },
    body: interpolate(target.url_options.data, run),
  });
  const answer: unknown = await response.json();
  if (response.status !== 200) throw new Error(`${target.refId} answered ${response.status}: ${JSON.stringify(answer)}`);
  return longToWide(frameOf(runJq(target.root_selector, answer), target.columns));
}

/** The frames joined on the time field `byField`, outer: every time of any frame, a missing value null. */
function joinByField(frames: Frame[], byField: string): Frame {
  const times = [...new Set(frames.flatMap((f) => f.fields.find((field) => field.name === byField)!.values as number[]))].sort((a, b) => a - b);
  const fields = frames.flatMap((frame) => {
    const own = frame.fields.find((field) => field.name === byField)!.values as number[];
    return frame.fields
      .filter((f) => f.name !== byField)
      .map((f) => ({ ...f, values: times.map((t) => (own.includes(t) ? f.values[own.indexOf(t)]! : null)) }));
  });
  return { fields: [{ name: byField, type: "time", values: times }, ...fields] };
}

/** calculateField as the dashboard uses it: reduceRow `sum` (null as zero when asked) over `include`, or binary `/` of two fields. */
function calculateField(frame: Frame, options: Record<string, unknown>): Frame {
  const named = (name: string) => frame.fields.find((f) => f.name === name)!.values as (number | null)[];
  let values: (number | null)[];
  if (options.mode === "reduceRow") {
    const reduce = options.reduce as { include: string[]; reducer: string; nullValueMode?: string };
    if (reduce.reducer !== "sum") throw new Error(`reducer ${reduce.reducer} is not modelled`);
    const asZero = reduce.nullValueMode === "null as zero";
    values = named(reduce.include[0]!).map((_, row) =>
      reduce.include.reduce<number | null>((sum, name) => {
        const value = named(name)[row] ?? (asZero ? 0 : null);
        return sum === null || value === null ? null : sum + value;
      }, 0),
    );
  } else if (options.mode === "binary") {
    const binary = options.binary as { left: { matcher: { options: string } }; operator: string; right: { matcher: { options: string } } };
    if (binary.operator !== "/") throw new Error(`operator ${binary.operator} is not modelled`);
    const [left, right] = [named(binary.left.matcher.options), named(binary.right.matcher.options)];
    values = left.map((l, row) => (l === null || right[row] === null ? null : l / right[row]!));
  } else {
    throw new Error(`calculateField mode ${String(options.mode)} is not modelled`);
  }
  const field: Field = { name: String(options.alias), type: "number", values };
  const time = frame.fields.find((f) => f.type === "time")!;
  return { fields: options.replaceFields ? [time, field] : [...frame.fields, field] };
}

/** The panel's frames after its transformations (its queries' frames when it has none). @throws Error for an answer other than 200. */
export async function runPanel(panel: RunnablePanel, run: PanelRun): Promise<Frame[]> {
  let frames = await Promise.all(panel.targets.map((target) => runTarget(target, run)));
  for (const { id, options } of panel.transformations ?? []) {
    if (id === "joinByField") frames = [joinByField(frames, String(options.byField))];
    else if (id === "calculateField") frames = frames.map((frame) => calculateField(frame, options));
    else throw new Error(`transformation ${id} is not modelled`);
  }
  return frames;
}

/** The number series of `frames`: name, labels and the points [time, value] that have a value. */
export function seriesOf(frames: Frame[]): { name: string; labels: Record<string, string>; points: [number, number][] }[] {
  return frames.flatMap((frame) => {
    const time = frame.fields.find((f) => f.type === "time")!.values as number[];
    return frame.fields
      .filter((f) => f.type === "number")
      .map((f) => ({
        name: f.name,
        labels: f.labels ?? {},
        points: time.flatMap((t, i): [number, number][] => (f.values[i] === null ? [] : [[t, f.values[i] as number]])),
      }));
  });
}
