/**
 * Layers point one way (README "Code tour"): routes → services → db, with the
 * domain (src/domain) at the bottom, the HTTP edge's helpers (src/http)
 * beside the services, and the runtime adapters (src/runtime/node,
 * src/runtime/workers) and middleware above them; the runtime does not import
 * the middleware or the routes (it is wired to the app by the entry points). Reads every `src/**\/*.ts` file's imports (static, `export … from`,
 * dynamic) and fails on any import a layer may not make, on services or db
 * code that speaks HTTP (imports Hono, src/http, a route or a middleware:
 * services throw domain errors and take domain values), on a driver imported
 * outside the drivers, on one runtime importing the other, and on any import
 * cycle between files, printing the offending imports.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const SRC = fileURLToPath(new URL("../../src/", import.meta.url));

/** What each layer may import (besides packages); entry points (app.ts, server.ts, worker.ts) may import anything. */
const ALLOWED: Record<string, string[]> = {
  logger: ["logger", "telemetry"],
  // Traces and metrics through the OpenTelemetry API, for every layer like the logger (docs/operations.md#traces).
  telemetry: ["telemetry"],
  domain: ["domain"],
  db: ["db", "domain", "telemetry"],
  config: ["config", "logger"],
  services: ["services", "db", "domain", "config", "logger", "telemetry"],
  http: ["http", "domain", "db", "config", "logger", "telemetry"],
  openapi: ["openapi", "http", "domain", "config"],
  middleware: ["middleware", "services", "db", "domain", "http", "config", "logger", "telemetry"],
  // Not middleware, not routes: the runtime adapters get what they share with the app from src/http and the logger.
  runtime: ["runtime", "services", "db", "domain", "http", "config", "logger", "telemetry"],
  routes: ["routes", "middleware", "services", "openapi", "domain", "http", "config", "logger"],
};
const ENTRY_POINTS = ["app", "server", "worker"];
/** The one db module routes may read: the tables and each representation beside them, declarations without I/O (a PATCH schema's nullable members). */
const DECLARATIONS = "db/schema.ts";
/** Layers that hold the rules and the data, not HTTP: no Hono in them. */
const NO_HTTP = ["domain", "db", "services"];
/** Layers of the HTTP edge: its helpers (Error envelope, ETags, context, router, validation, schemas, …), routes and middleware. */
const HTTP_LAYERS = ["http", "routes", "middleware"];

interface Import {
  from: string;
  to: string;
  specifier: string;
}

/** Every .ts file under `dir`, as paths relative to src/ with `/` separators. */
function sourceFiles(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts") ? [relative(SRC, path).split(sep).join("/")] : [];
  });
}

/** Module specifiers a file imports: `import … from`, `export … from`, `import "…"`, `import("…")`. */
function importSpecifiers(source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
  const patterns = [/\b(?:import|export)\s[^'"`;]*?\bfrom\s*["']([^"']+)["']/g, /\bimport\s*["']([^"']+)["']/g, /\bimport\s*\(\s*["']([^"']+)["']\s*\)/g];
  return patterns.flatMap((pattern) => [...code.matchAll(pattern)].map((m) => m[1]!));
}

/** The layer of a file relative to src/: its top directory, or its name for a top-level file. */
function layerOf(file: string): string {
  const [first, ...rest] = file.split("/");
  return rest.length > 0 ? first! : first!.replace(/\.ts$/, "");
}

const files = sourceFiles();
const imports: Import[] = files.flatMap((from) =>
  importSpecifiers(readFileSync(join(SRC, from), "utf8")).map((specifier) => {
    if (!specifier.startsWith(".")) return { from, to: specifier, specifier };
    const target = normalize(join(dirname(from), specifier))
      .split(sep)
      .join("/");
    return { from, to: target.endsWith(".ts") ? target : `${target}.ts`, specifier };
  }),
);
const local = imports.filter((i) => i.specifier.startsWith("."));

describe("layers", () => {
  it("reads the imports of every source file", () => {
    expect(files.length).toBeGreaterThan(50);
    expect(local.length).toBeGreaterThan(150);
    for (const { from, to } of local) expect(files, `${from} imports ${to}, which is not a source file`).toContain(to);
    expect(importSpecifiers('import type { A } from "./a";\nexport { b } from "../b";\nimport "./c";\nconst d = await import("./d");')).toEqual([
      "./a",
      "../b",
      "./c",
      "./d",
    ]);
  });

  it("every import points down: no layer imports one above it", () => {
    const offending = local
      .filter(({ from, to }) => {
        const source = layerOf(from);
        if (ENTRY_POINTS.includes(source) || (source === "routes" && to === DECLARATIONS)) return false;
        const allowed = ALLOWED[source];
        return !allowed?.includes(layerOf(to));
      })
      .map(
        ({ from, specifier }) =>
          `src/${from} imports "${specifier}" (${layerOf(from)} may import: ${ALLOWED[layerOf(from)]?.join(", ") ?? "nothing: unknown layer"})`,
      );
    expect(offending).toEqual([]);
  });

  it("services, db and domain do not speak HTTP (no Hono)", () => {
    const offending = imports
      .filter(({ from, specifier }) => NO_HTTP.includes(layerOf(from)) && /^(hono|@hono\/)/.test(specifier))
      .map(({ from, specifier }) => `src/${from} imports "${specifier}"`);
    expect(offending).toEqual([]);
  });

  it("services ∌ HTTP: services, db and domain import no HTTP helper, Hono, route or middleware", () => {
    const offending = imports
      .filter(({ from, to, specifier }) => {
        if (!NO_HTTP.includes(layerOf(from))) return false;
        if (!specifier.startsWith(".")) return /^(hono|@hono\/)/.test(specifier);
        return HTTP_LAYERS.includes(layerOf(to));
      })
      .map(({ from, specifier }) => `src/${from} imports "${specifier}"`);
    expect(offending).toEqual([]);
  });

  it("only the entry points and the drivers import a driver (src/db/driver/): the model and the services see the port", () => {
    const offending = local
      .filter(({ from, to }) => to.startsWith("db/driver/") && !from.startsWith("db/driver/") && !ENTRY_POINTS.includes(layerOf(from)))
      .map(({ from, specifier }) => `src/${from} imports "${specifier}"`);
    expect(offending).toEqual([]);
  });

  it("the Node runtime and the Workers runtime do not import each other", () => {
    const runtimeOf = (file: string) => /^runtime\/(node|workers)\//.exec(file)?.[1];
    const offending = local
      .filter(({ from, to }) => runtimeOf(from) !== undefined && runtimeOf(to) !== undefined && runtimeOf(from) !== runtimeOf(to))
      .map(({ from, specifier }) => `src/${from} imports "${specifier}"`);
    expect(offending).toEqual([]);
  });

  it("no import cycle between source files", () => {
    const edges = new Map<string, string[]>();
    for (const { from, to } of local) edges.set(from, [...(edges.get(from) ?? []), to]);
    const cycles: string[] = [];
    const state = new Map<string, "open" | "done">();
    const stack: string[] = [];
    const visit = (file: string): void => {
      state.set(file, "open");
      stack.push(file);
      for (const next of edges.get(file) ?? []) {
        if (state.get(next) === "open") cycles.push([...stack.slice(stack.indexOf(next)), next].map((f) => `src/${f}`).join(" → "));
        else if (!state.has(next)) visit(next);
      }
      stack.pop();
      state.set(file, "done");
    };
    for (const file of files) if (!state.has(file)) visit(file);
    expect(cycles).toEqual([]);
  });
});
