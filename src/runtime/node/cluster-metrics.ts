/**
 * A cluster's metrics in one scrape (docs/operations.md#metrics): the primary asks each server process for its text over IPC, labels each
 * sample with `petstore_process` (slot or `primary`) and adds its own: process health, restarts by slot, which processes answered.
 */
import type { Worker } from "node:cluster";
import type { PrometheusExporter } from "@opentelemetry/exporter-prometheus";
import { create, exportedName, exportedNames, INSTRUMENTS, SCOPE } from "../../telemetry/instruments";
import { serveMetrics } from "./metrics-listener";
import type { WebhookSeries } from "./webhook-series";
import { observeProcess } from "./process-metrics";
import { primaryResource } from "./service-resource";

/** A scrape of a server process; `counted`: its text has the backlogs (one process's per scrape: they are read from the database). */
type Scrape = { petstore: "scrape"; id: number; counted: boolean };
type Exposition = { petstore: "metrics"; id: number; text: string };

/** How long a scrape waits for a server process's text, ms: one not answering by then is shown down, and the primary answers within 1 s. */
export const PROCESS_ANSWER_MS = 800;

/** This process's metrics as Prometheus text (`exporter` serves no port of its own). */
export async function exposition(exporter: PrometheusExporter): Promise<string> {
  const [{ PrometheusSerializer }, { resourceMetrics }] = await Promise.all([import("@opentelemetry/exporter-prometheus"), exporter.collect()]);
  return new PrometheusSerializer().serialize(resourceMetrics);
}

/** In a server process of a cluster: answer the primary's scrapes with `exporter`'s text, with `series`' backlogs when asked. */
export function answerScrapes(exporter: PrometheusExporter, series: WebhookSeries): void {
  process.on("message", (message: Partial<Scrape>) => {
    if (message?.petstore !== "scrape") return;
    // Read at the start of the series' collect, which `exposition` calls in this same tick: concurrent scrapes cannot mix their flags.
    series.counts = message.counted !== false;
    void exposition(exporter).then((text) => process.send?.({ petstore: "metrics", id: message.id, text } satisfies Partial<Exposition>, () => {}));
  });
}

/** Sample `line` of a text exposition with `petstore_process="<name>"` first among its labels, unless it names its process already. */
function labelled(line: string, name: string): string {
  if (line.includes('petstore_process="')) return line;
  const label = `petstore_process="${name}"`;
  const brace = line.indexOf("{");
  const space = line.indexOf(" ");
  if (brace === -1 || brace > space) return `${line.slice(0, space)}{${label}}${line.slice(space)}`;
  return `${line.slice(0, brace + 1)}${label}${line[brace + 1] === "}" ? "" : ","}${line.slice(brace + 1)}`;
}

/** Families read from the database (each subscription's backlog and oldest age): one value, not one per process. */
const SHARED = new Set([INSTRUMENTS.subscriptionBacklog, INSTRUMENTS.subscriptionOldest].map((i) => exportedName(i).replaceAll(".", "_")));

/**
 * Several processes' text expositions as one: each family's HELP and TYPE once, then every process's samples, labelled with its name; a
 * SHARED family's samples come from the first process that has them, unlabelled.
 */
function mergeExpositions(sources: readonly { name: string; text: string }[]): string {
  type Family = { name: string; help?: string; type?: string; samples: string[]; from?: string };
  const families = new Map<string, Family>();
  for (const { name, text } of sources) {
    let family: Family | undefined;
    for (const line of text.split("\n")) {
      const meta = /^# (HELP|TYPE) (\S+)/.exec(line);
      if (meta) {
        family = families.get(meta[2]!) ?? { name: meta[2]!, samples: [] };
        families.set(family.name, family);
        if (meta[1] === "HELP") family.help ??= line;
        else family.type ??= line;
      } else if (line === "" || line.startsWith("#") || !family) continue;
      else if (!SHARED.has(family.name)) family.samples.push(labelled(line, name));
      else {
        family.from ??= name;
        if (family.from === name) family.samples.push(line);
      }
    }
  }
  return `${[...families.values()].flatMap(({ help, type, samples }) => [help ?? [], type ?? [], samples].flat()).join("\n")}\n`;
}

/** Ask `worker` for its text (`counted`: with the backlogs); null when it does not answer within PROCESS_ANSWER_MS or cannot be asked. */
function scrapeOf(worker: Worker, id: number, counted: boolean): Promise<string | null> {
  if (!worker.isConnected()) return Promise.resolve(null);
  return new Promise((resolve) => {
    const done = (text: string | null) => {
      clearTimeout(timer);
      worker.off("message", onMessage);
      resolve(text);
    };
    const onMessage = (message: Partial<Exposition>) => message?.petstore === "metrics" && message.id === id && done(message.text ?? null);
    const timer = setTimeout(() => done(null), PROCESS_ANSWER_MS);
    worker.on("message", onMessage);
    worker.send({ petstore: "scrape", id, counted } satisfies Scrape, (error) => error && done(null));
  });
}

/**
 * One scrape `id` of the cluster: every server process's text that arrived within PROCESS_ANSWER_MS, then the primary's own, whose
 * `petstore_cluster_process_up` says (through `answered`, slot → 1 or 0) which processes answered in time.
 */
async function scrapeCluster(processes: ReadonlyMap<number, Worker>, id: number, answered: Map<number, number>, exporter: PrometheusExporter) {
  const counting = [...processes.values()].find((worker) => worker.isConnected());
  const texts = await Promise.all([...processes].map(async ([slot, worker]) => ({ slot, text: await scrapeOf(worker, id, worker === counting) })));
  answered.clear();
  for (const { slot, text } of texts) answered.set(slot, text === null ? 0 : 1);
  const sources = texts.flatMap(({ slot, text }) => (text === null ? [] : [{ name: String(slot), text }]));
  return mergeExpositions([...sources, { name: "primary", text: await exposition(exporter) }]);
}

/** What the primary's metrics listener needs to know of its cluster, and tells it. */
export interface ClusterMetrics {
  /** A server process in `slot` exited while serving and was replaced. */
  restarted(slot: number): void;
  close(): Promise<void>;
}

/** Serve the cluster's metrics on `address`; `processes()` are the server processes by slot now. @throws Error when the port cannot be bound. */
export async function serveClusterMetrics(
  address: { host: string; port: number },
  slots: number,
  processes: () => ReadonlyMap<number, Worker>,
): Promise<ClusterMetrics> {
  const [{ PrometheusExporter }, { MeterProvider }, resource] = await Promise.all([
    import("@opentelemetry/exporter-prometheus"),
    import("@opentelemetry/sdk-metrics"),
    primaryResource(),
  ]);
  const exporter = new PrometheusExporter({ preventServerStart: true });
  const meter = new MeterProvider({ resource, readers: [exporter], views: exportedNames() }).getMeter(SCOPE);
  const stopObserving = observeProcess(meter);
  const restarts = create(meter, INSTRUMENTS.restarts);
  const bySlot = (slot: number) => ({ "petstore.process": String(slot) });
  // Every slot's series from the start: the first restart is an increase Prometheus can see.
  for (let slot = 0; slot < slots; slot++) restarts.add(0, bySlot(slot));
  const answered = new Map<number, number>();
  create(meter, INSTRUMENTS.processUp).addCallback((result) => {
    for (const [slot, up] of answered) result.observe(up, bySlot(slot));
  });
  let scrapes = 0;
  const server = await serveMetrics(address, () => scrapeCluster(processes(), ++scrapes, answered, exporter));
  return {
    restarted: (slot) => restarts.add(1, bySlot(slot)),
    close: () => {
      stopObserving();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
