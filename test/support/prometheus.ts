/**
 * A real Prometheus (Debian's `prometheus`) for tests: scrapes the given targets every second from a throw-away folder, and answers
 * instant queries; `until` polls for what a scrape makes queryable.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A port free on 127.0.0.1 a moment ago. */
export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** Poll `fn` until it returns a value, or throw with `what` after `timeoutMs`. */
export async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** One series of an instant query's answer. */
export interface Sample {
  metric: Record<string, string>;
  value: [number, string];
}

export interface Prometheus {
  /** The instant query `promql`'s series (empty while nothing matches). */
  query(promql: string): Promise<Sample[]>;
  /** Poll `promql` until it answers at least one series. */
  queryUntil(promql: string, timeoutMs?: number): Promise<Sample[]>;
  stop(): Promise<void>;
}

/** Start Prometheus scraping `targets` (`host:port`) every second as job `petstore`, with `rules` (file paths) loaded. */
export async function startPrometheus(targets: string[], rules: string[] = []): Promise<Prometheus> {
  const dir = mkdtempSync(join(tmpdir(), "petstore-prometheus-"));
  const webPort = await freePort();
  const config = {
    global: { scrape_interval: "1s", evaluation_interval: "1s" },
    rule_files: rules,
    scrape_configs: [{ job_name: "petstore", static_configs: [{ targets }] }],
  };
  // JSON is YAML.
  writeFileSync(join(dir, "prometheus.yml"), JSON.stringify(config));
  const args = [`--config.file=${join(dir, "prometheus.yml")}`, `--storage.tsdb.path=${join(dir, "tsdb")}`, `--web.listen-address=127.0.0.1:${webPort}`];
  const child: ChildProcess = spawn("prometheus", args, { stdio: "ignore" });
  const query = async (promql: string) => {
    const answer = (await (await fetch(`http://127.0.0.1:${webPort}/api/v1/query?query=${encodeURIComponent(promql)}`)).json()) as {
      data: { result: Sample[] };
    };
    return answer.data.result;
  };
  return {
    query,
    queryUntil: (promql, timeoutMs) => until(promql, async () => ((await query(promql)).length > 0 ? query(promql) : undefined), timeoutMs),
    async stop() {
      if (child.exitCode === null) await new Promise((resolve) => child.once("exit", resolve).kill("SIGTERM"));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
