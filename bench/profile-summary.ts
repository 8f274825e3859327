/**
 * Where a server's CPU went: reads V8 CPU profiles (`npm run bench --
 * --cpu-prof DIR`, Node's `--cpu-prof`) and prints each one's busy time
 * (idle left out) as shares in Markdown tables: by layer (SQLite, Node's
 * HTTP, the app, Hono, the log, GC, …), then by group: the app's own code by
 * folder of src/ (frames of a bundle mapped back through its source map),
 * each npm package, Node's internals by module, V8's GC, and native calls by
 * name. With `--functions N`, the N costliest functions too. A Worker
 * profile's frames map through the bundle the bench saved beside it.
 *
 * Usage: `npm run profile:summary -- [--functions N] FILE.cpuprofile …`
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { originalPositionFor, TraceMap } from "@jridgewell/trace-mapping";
import { WORKER_BUNDLE } from "./worker-profile";

/** The parts of a V8 `.cpuprofile` read here (https://chromedevtools.github.io/devtools-protocol/tot/Profiler/#type-Profile). */
interface Profile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number } }[];
  samples: number[];
  /** µs since the previous sample; the first one is since `startTime`. */
  timeDeltas: number[];
}

type CallFrame = Profile["nodes"][number]["callFrame"];

const maps = new Map<string, TraceMap | null>();

/** The source map beside a bundled file (`file.mjs.map`), or null. */
function mapOf(path: string): TraceMap | null {
  if (!maps.has(path)) {
    try {
      maps.set(path, new TraceMap(readFileSync(`${path}.map`, "utf8")));
    } catch {
      maps.set(path, null);
    }
  }
  return maps.get(path) ?? null;
}

/** The URL workerd gives the Worker's bundle in a profile; the bench saves that bundle beside the profile. */
const WORKER_BUNDLE_URL = "file:///bundle/worker.js";

/** The profile being read: Worker frames map through the bundle saved beside it (bench/worker-profile.ts). */
let profileFile = "";

/** Where a frame's code comes from: a source file and 1-based line (mapped through the bundle's source map), a `node:` module, or "". */
function sourceOf(frame: CallFrame): { source: string; line: number } {
  const line = frame.lineNumber + 1;
  if (!frame.url.startsWith("file://")) return { source: frame.url, line };
  const path = frame.url === WORKER_BUNDLE_URL ? join(dirname(profileFile), WORKER_BUNDLE) : fileURLToPath(frame.url);
  const map = mapOf(path);
  const original = map ? originalPositionFor(map, { line, column: frame.columnNumber }) : undefined;
  return original?.source ? { source: original.source, line: original.line ?? line } : { source: path, line };
}

/**
 * The npm package of a source path. The server bundle inlines drizzle-orm,
 * whose own source maps name its files `src/…` without the package: in a
 * bundle's map, `node_modules/src/…` is drizzle-orm (build:server in package.json).
 */
function packageOf(source: string): string | undefined {
  const name = source.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/)?.[1];
  return name === "src" ? "drizzle-orm" : name;
}

/** V8's own frames by name. */
const special = new Map([
  ["(garbage collector)", "V8: garbage collection"],
  ["(program)", "V8: native, not attributed"],
  ["(idle)", "idle"],
  ["(root)", "idle"],
]);

/** The group a frame's self time is counted under. */
function groupOf(frame: CallFrame): string {
  const named = special.get(frame.functionName);
  if (named) return named;
  const { source } = sourceOf(frame);
  const pkg = packageOf(source);
  if (pkg) return `package: ${pkg}`;
  const app = source.match(/(?:^|\/)src\/([^/]+\/)?/);
  if (app) return `app: src/${app[1] ?? ""}`;
  if (source.startsWith("node:"))
    return `Node: ${
      source
        .slice("node:".length)
        .replace(/^internal\//, "")
        .split("/")[0]
    }`;
  if (source === "") return `native: ${frame.functionName || "(anonymous)"}`;
  return `other: ${source}`;
}

/** The layer a group belongs to, for the first table: a handful of rows that add up to the whole. */
function layerOf(group: string): string {
  if (group === "package: libsql") return "SQLite (libsql)";
  if (group === "native: stat") return "database file identity check (stat)";
  if (group === "package: drizzle-orm") return "Drizzle (binding values, mapping rows)";
  if (group.startsWith("app: ")) return "the app (src/)";
  if (/^package: (hono|@hono\/.*|zod|@humanwhocodes\/momoa)$/.test(group)) return "Hono, @hono/node-server, validation";
  if (/^package: (pino|sonic-boom|thread-stream)$/.test(group) || group === "native: writeString") return "request log (pino, its file writes)";
  if (/^native: (writeUtf8String|writeLatin1String|writev|writeBuffer)$/.test(group)) return "socket writes (syscalls)";
  if (group === "Node: crypto") return "crypto (request ids, key and ETag hashes)";
  if (group.startsWith("Node: ") || group.startsWith("native: RegExp")) return "Node: HTTP, streams, Headers, timers";
  if (group === "V8: garbage collection") return "V8: garbage collection";
  // Worker profiles (workerd): the libSQL HTTP client, the runtime's web APIs, its bindings and Node compatibility.
  if (/^package: @libsql\//.test(group)) return "libSQL client (Hrana over HTTP)";
  if (/^native: (fetch|Request|Response|Headers|URL|json|text|arrayBuffer|clone)$/.test(group)) return "Workers: fetch, Request, Response, URL";
  if (group.startsWith("other: cloudflare-internal:")) return "Workers: bindings (Rate Limiting)";
  if (group.startsWith("other: node-internal:")) return "Workers: Node compatibility (Buffer, util.inspect)";
  if (group === "package: wrangler") return "wrangler dev's middleware";
  return "V8 and native code, not attributed";
}

/** The group and the function name (with its source and line) of one call frame. */
function describe(frame: CallFrame): { group: string; name: string } {
  const group = groupOf(frame);
  const { source, line } = sourceOf(frame);
  const where = source ? ` (${source.replace(/^.*node_modules\//, "").replace(/^(\.\.\/)+/, "")}:${line})` : "";
  return { group, name: `${frame.functionName || "(anonymous)"}${where}` };
}

/** Shares (0–1) of busy time per group and per function of one profile. */
function summarise(profile: Profile): { busyMs: number; groups: [string, number][]; functions: [string, number][] } {
  // Each node is described once (a source-map lookup), however many samples it has.
  const nodes = new Map(profile.nodes.map((n) => [n.id, describe(n.callFrame)]));
  const byGroup = new Map<string, number>();
  const byFunction = new Map<string, number>();
  // A sample's time is the delta to the next sample (how Chrome DevTools attributes it).
  profile.samples.forEach((id, i) => {
    const us = profile.timeDeltas[i + 1] ?? 0;
    const { group, name } = nodes.get(id)!;
    byGroup.set(group, (byGroup.get(group) ?? 0) + us);
    if (group !== "idle") byFunction.set(name, (byFunction.get(name) ?? 0) + us);
  });
  byGroup.delete("idle");
  const busy = [...byGroup.values()].reduce((a, b) => a + b, 0);
  const sorted = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).map(([k, us]) => [k, us / busy] as [string, number]);
  return { busyMs: busy / 1000, groups: sorted(byGroup), functions: sorted(byFunction) };
}

const { values, positionals } = parseArgs({ allowPositionals: true, options: { functions: { type: "string", default: "0" } } });
if (positionals.length === 0) throw new Error("usage: npm run profile:summary -- [--functions N] FILE.cpuprofile …");
const percent = (share: number) => `${(share * 100).toFixed(1)} %`;
for (const file of positionals) {
  profileFile = file;
  const { busyMs, groups, functions } = summarise(JSON.parse(readFileSync(file, "utf8")) as Profile);
  const byLayer = new Map<string, number>();
  for (const [group, share] of groups) {
    const layer = layerOf(group);
    byLayer.set(layer, (byLayer.get(layer) ?? 0) + share);
  }
  console.log(`\n${file}: ${busyMs.toFixed(0)} ms busy\n\n| layer | share of busy time |\n|---|---:|`);
  for (const [layer, share] of [...byLayer].sort((a, b) => b[1] - a[1])) console.log(`| ${layer} | ${percent(share)} |`);
  console.log("\n| group | share of busy time |\n|---|---:|");
  for (const [group, share] of groups.filter(([, s]) => s >= 0.005)) console.log(`| ${group} | ${percent(share)} |`);
  const rest = groups.filter(([, s]) => s < 0.005);
  if (rest.length > 0) console.log(`| ${rest.length} more groups, each < 0.5 % | ${percent(rest.reduce((a, [, s]) => a + s, 0))} |`);
  const top = Number(values.functions);
  if (top > 0) {
    console.log("\n| function | share of busy time |\n|---|---:|");
    for (const [name, share] of functions.slice(0, top)) console.log(`| ${name.replaceAll("|", "\\|")} | ${percent(share)} |`);
  }
}
