/**
 * `npm run bench:webhooks [-- --subscriptions 50 --events 3000 --duration 20]`
 *
 * Measures how the Node server answers `GET /health` while a webhook backlog
 * drains (docs/api.md#events-and-webhooks: fan-out and delivery never block request handling;
 * issue 17 asks for p99 under 50 ms with 50 subscriptions and 3,000 events).
 *
 * A temp database gets `--subscriptions` subscriptions (all event types) to a
 * receiver on loopback (a child process answering 204), then `--events`
 * events (category creations) through the services. The server (`src/server.ts`
 * under tsx, WEBHOOKS_ALLOW_PRIVATE=true) then starts with that backlog; this
 * process sends one `/health` request after another for `--duration` seconds
 * and prints p50/p99/max latency (ms) and the deliveries received meanwhile.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { databaseSettings, openDatabase } from "../src/db/driver/open";
import { createCategory } from "../src/services/categories.service";
import { createWebhook } from "../src/services/webhooks/subscriptions";

const { values } = parseArgs({
  options: {
    subscriptions: { type: "string", default: "50" },
    events: { type: "string", default: "3000" },
    duration: { type: "string", default: "20" },
  },
});
const ROOT = new URL("..", import.meta.url).pathname;

/** Spawn `args` and resolve with the child and the first stdout match of `pattern`. */
function spawnUntil(args: string[], env: Record<string, string>, pattern: RegExp): Promise<{ child: ChildProcess; match: RegExpMatchArray }> {
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const match = out.match(pattern);
      if (match) resolve({ child, match });
    });
    child.stderr!.on("data", (chunk: Buffer) => process.stderr.write(chunk));
    child.once("exit", (code) => reject(new Error(`${args.join(" ")} exited with ${code}`)));
  });
}

const RECEIVER = `
const http = require("node:http");
let count = 0;
http.createServer((req, res) => {
  if (req.url === "/count") { res.end(String(count)); return; }
  req.resume();
  req.on("end", () => { count += 1; res.statusCode = 204; res.end(); });
}).listen(0, "127.0.0.1", function () { console.log("port " + this.address().port); });
`;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "petstore-bench-webhooks-"));
  const children: ChildProcess[] = [];
  try {
    const receiver = await spawnUntil(["-e", RECEIVER], {}, /port (\d+)/);
    children.push(receiver.child);
    const receiverUrl = `http://127.0.0.1:${receiver.match[1]}`;
    const count = async () => Number(await (await fetch(`${receiverUrl}/count`)).text());

    const databaseUrl = `file:${join(dir, "bench.db")}`;
    const opened = await openDatabase(databaseSettings({ DATABASE_URL: databaseUrl }));
    const { db } = opened;
    for (let i = 0; i < Number(values.subscriptions); i++) {
      await createWebhook(db, { url: `${receiverUrl}/hook/${i}`, events: ["*"] }, { allowPrivateTargets: true, now: new Date() });
    }
    for (let i = 0; i < Number(values.events); i++) {
      await createCategory(db, { name: `Bench category ${i}`, description: "bench" }, new Date());
    }
    await opened.close();
    console.log(`backlog: ${values.subscriptions} subscriptions × ${values.events} events`);

    const server = await spawnUntil(
      ["--import", "tsx", "src/server.ts"],
      { DATABASE_URL: databaseUrl, HOST: "127.0.0.1", PORT: "0", WEBHOOKS_ALLOW_PRIVATE: "true", LOG_LEVEL: "error", RATE_LIMIT_ANON_PER_MIN: "1000000" },
      /listening on (http:\/\/[^\s:]+:\d+)/,
    );
    children.push(server.child);
    const base = server.match[1]!;
    const before = await count();
    const latencies: number[] = [];
    const until = performance.now() + Number(values.duration) * 1000;
    while (performance.now() < until) {
      const started = performance.now();
      const res = await fetch(`${base}/health`);
      await res.arrayBuffer();
      latencies.push(performance.now() - started);
      if (res.status !== 200) throw new Error(`/health answered ${res.status}`);
    }
    const delivered = (await count()) - before;
    latencies.sort((a, b) => a - b);
    const ms = (x: number) => x.toFixed(1);
    console.log(
      `/health during the drain: ${latencies.length} requests, p50 ${ms(percentile(latencies, 50))} ms, p99 ${ms(percentile(latencies, 99))} ms, max ${ms(latencies.at(-1)!)} ms; ${delivered} deliveries in ${values.duration} s`,
    );
  } finally {
    for (const child of children) child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
