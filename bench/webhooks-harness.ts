/**
 * The pieces of `npm run bench:webhooks` (bench/webhooks.ts) that run beside the servers it measures: a proxy in front of sqld that
 * sums the rows sqld reports, the receiver that checks each delivery's signature and keeps the order of arrival, the server
 * processes of a checkout, the `/health` sampler, and the seed (raw SQL, unmetered).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { Agent, createServer, type IncomingHttpHeaders, request as upstreamRequest, type Server } from "node:http";
import type { Client } from "@libsql/client";
import { Webhook } from "standardwebhooks";

/** Rows sqld reported (`rows_read`, `rows_written`: what Turso and D1 bill) for the requests that passed the proxy. */
export interface Rows {
  read: number;
  written: number;
}

/** A counting HTTP proxy to a libSQL server: `url` is its `DATABASE_URL`. */
export interface RowProxy {
  url: string;
  rows(): Rows;
  /** Start counting from zero. */
  reset(): void;
  close(): Promise<void>;
}

/** Add every `rows_read` / `rows_written` number of one Hrana answer to `rows`: a JSON document (`/v2|v3/pipeline`) or JSON lines (`/v3/cursor`). */
function countAnswer(body: Buffer, rows: Rows): void {
  const add = (key: string, value: unknown) => {
    if (typeof value === "number" && key === "rows_read") rows.read += value;
    else if (typeof value === "number" && key === "rows_written") rows.written += value;
    return value;
  };
  for (const line of body.toString("utf8").split("\n")) if (line.trimStart().startsWith("{")) JSON.parse(line, add);
}

/**
 * Start a proxy on loopback that forwards every request to `target` (sqld) and counts the rows in its answers. It asks sqld for
 * uncompressed answers (no `accept-encoding`), so that it can read them.
 */
export async function startRowProxy(target: string): Promise<RowProxy> {
  const upstream = new URL(target);
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  let rows: Rows = { read: 0, written: 0 };
  const server = createServer((req, res) => {
    res.on("error", () => {});
    const headers: IncomingHttpHeaders = { ...req.headers, host: upstream.host };
    delete headers["accept-encoding"];
    const forwarded = upstreamRequest({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers, agent }, (answer) => {
      const chunks: Buffer[] = [];
      answer.on("data", (chunk: Buffer) => chunks.push(chunk));
      answer.on("end", () => {
        const body = Buffer.concat(chunks);
        countAnswer(body, rows);
        const out = { ...answer.headers, "content-length": String(body.length) };
        delete out["transfer-encoding"];
        res.writeHead(answer.statusCode ?? 502, out);
        res.end(body);
      });
      answer.on("error", () => res.destroy());
    });
    forwarded.on("error", (error) => {
      if (res.headersSent) res.destroy();
      else res.writeHead(502, { "content-type": "text/plain" }).end(`proxy: ${error.message}`);
    });
    req.pipe(forwarded);
  });
  const port = await listen(server);
  return {
    url: `http://127.0.0.1:${port}`,
    rows: () => ({ ...rows }),
    reset: () => {
      rows = { read: 0, written: 0 };
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      agent.destroy();
    },
  };
}

/** Listen on an OS-chosen loopback port; resolves with it. */
function listen(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      resolve(typeof address === "object" && address ? address.port : 0);
    });
  });
}

/** One delivery as the receiver saw it. */
export interface Arrival {
  eventId: number;
  /** ms since the receiver started (performance.now()). */
  at: number;
}

/** A delivery whose signature no secret of its subscription verified, or whose `webhook-id` is not `evt_<id>`. */
export interface Rejected {
  webhookId: number;
  eventId: number;
  at: number;
  reason: string;
}

/** The subscribers' end: `POST /hook/<webhookId>` answered 204, after the signature check, in arrival order. */
export interface Receiver {
  url: string;
  /** Per subscription, every delivery in arrival order (duplicates included). */
  arrivals: Map<number, Arrival[]>;
  /** Per subscription, the event ids received at least once. */
  distinct: Map<number, Set<number>>;
  /** Per subscription, every secret it had (the seeded one, then each rotation's). */
  secrets: Map<number, string[]>;
  rejected: Rejected[];
  /** Deliveries received so far (duplicates included), and when the last one came (performance.now()). */
  stats(): { received: number; lastAt: number };
  close(): Promise<void>;
}

/** Start the receiver on loopback, answering after `latencyMs`; a delivery verifies when any secret its subscription ever had verifies it (standardwebhooks). */
export async function startReceiver(latencyMs = 0): Promise<Receiver> {
  const arrivals = new Map<number, Arrival[]>();
  const distinct = new Map<number, Set<number>>();
  const secrets = new Map<number, string[]>();
  const verifiers = new Map<string, Webhook>();
  const rejected: Rejected[] = [];
  let received = 0;
  let lastAt = 0;
  const verify = (webhookId: number, body: string, headers: Record<string, string>): { id?: number; error?: string } => {
    for (const secret of secrets.get(webhookId) ?? []) {
      const verifier = verifiers.get(secret) ?? new Webhook(secret);
      verifiers.set(secret, verifier);
      try {
        return { id: (verifier.verify(body, headers) as { id: number }).id };
      } catch {
        // try the subscription's other secrets
      }
    }
    return { error: `no secret of subscription ${webhookId} verifies ${headers["webhook-signature"]}` };
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const at = performance.now();
      const webhookId = Number(/^\/hook\/(\d+)$/.exec(req.url ?? "")?.[1]);
      const body = Buffer.concat(chunks).toString("utf8");
      const header = (name: string) => String(req.headers[name] ?? "");
      const headers = {
        "webhook-id": header("webhook-id"),
        "webhook-timestamp": header("webhook-timestamp"),
        "webhook-signature": header("webhook-signature"),
      };
      const checked = verify(webhookId, body, headers);
      const eventId = checked.id ?? Number((JSON.parse(body) as { id?: number }).id);
      if (checked.error) rejected.push({ webhookId, eventId, at, reason: checked.error });
      else if (headers["webhook-id"] !== `evt_${eventId}`) rejected.push({ webhookId, eventId, at, reason: `webhook-id ${headers["webhook-id"]}` });
      received += 1;
      lastAt = at;
      if (!arrivals.has(webhookId)) {
        arrivals.set(webhookId, []);
        distinct.set(webhookId, new Set());
      }
      arrivals.get(webhookId)!.push({ eventId, at });
      distinct.get(webhookId)!.add(eventId);
      if (latencyMs > 0) setTimeout(() => res.writeHead(204).end(), latencyMs);
      else res.writeHead(204).end();
    });
  });
  const port = await listen(server);
  return {
    url: `http://127.0.0.1:${port}`,
    arrivals,
    distinct,
    secrets,
    rejected,
    stats: () => ({ received, lastAt }),
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A server process of a checkout, listening at `base`. */
export interface ServerProcess {
  child: ChildProcess;
  base: string;
  /** The last lines it wrote (stdout and stderr). */
  tail(): string;
}

/** The environment every measured server gets (docs/configuration.md): loopback targets allowed, quiet logs, no rate limit in the way. */
const SERVER_ENV = {
  HOST: "127.0.0.1",
  PORT: "0",
  WEBHOOKS_ALLOW_PRIVATE: "true",
  LOG_LEVEL: "error",
  RATE_LIMIT_ANON_PER_MIN: "10000000",
  RATE_LIMIT_KEY_PER_MIN: "10000000",
};

/**
 * Start `node --import tsx src/server.ts` in `checkout` with `env`, add it to `children`, and resolve once it prints where it listens.
 * @throws Error with its last output when it exits first or does not listen within `timeoutMs`.
 */
export function startServer(checkout: string, env: Record<string, string>, children: ChildProcess[], timeoutMs = 60_000): Promise<ServerProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", "src/server.ts"], {
    cwd: checkout,
    env: { ...process.env, ...SERVER_ENV, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let output = "";
  const tail = () => output.slice(-3000);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${checkout}: the server did not listen within ${timeoutMs} ms:\n${tail()}`)), timeoutMs);
    const onData = (chunk: Buffer) => {
      output = (output + chunk.toString("utf8")).slice(-20_000);
      const match = /listening on (http:\/\/[^\s]+:\d+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve({ child, base: match[1]!, tail });
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${checkout}: the server exited (${code ?? signal}) before it listened:\n${tail()}`));
    });
  });
}

/** SIGTERM `child` (a graceful stop: no write left half done on sqld), SIGKILL after `graceMs`; resolves once it has exited. */
export async function stopGracefully(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
  await exited;
  clearTimeout(timer);
}

/** `/health` latency, ms, sampled back to back. */
export interface HealthSample {
  count: number;
  failed: number;
  p50: number;
  p99: number;
  max: number;
}

/**
 * The sampler: a child process of its own, so that the bench process's proxy and receiver work does not queue in its timings.
 * It sends `GET <base>/health` one after another until its stdin closes, then prints a HealthSample as JSON.
 */
const SAMPLER = `
const base = process.argv[1];
const latencies = [];
let failed = 0;
let running = true;
process.stdin.on("end", () => { running = false; }).resume();
(async () => {
  while (running) {
    const started = performance.now();
    try { const res = await fetch(base + "/health"); await res.arrayBuffer(); if (res.status !== 200) failed += 1; } catch { failed += 1; }
    latencies.push(performance.now() - started);
  }
  latencies.sort((a, b) => a - b);
  const pick = (p) => latencies.length ? latencies[Math.min(latencies.length - 1, Math.ceil((p / 100) * latencies.length) - 1)] : NaN;
  process.stdout.write(JSON.stringify({ count: latencies.length, failed, p50: pick(50), p99: pick(99), max: latencies.at(-1) ?? NaN }));
})();
`;

/** Start sampling `/health` of `base`; `stop()` resolves with the sample. */
export function sampleHealth(base: string, children: ChildProcess[]): { stop(): Promise<HealthSample> } {
  const child = spawn(process.execPath, ["-e", SAMPLER, base], { stdio: ["pipe", "pipe", "inherit"] });
  children.push(child);
  let out = "";
  child.stdout!.on("data", (chunk: Buffer) => (out += chunk.toString("utf8")));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return {
    stop: async () => {
      child.stdin!.end();
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
      return out ? (JSON.parse(out) as HealthSample) : { count: 0, failed: 0, p50: Number.NaN, p99: Number.NaN, max: Number.NaN };
    },
  };
}

/** What the seed made: each subscription's secret by id, and the staff key (when asked for). */
export interface Seeded {
  secrets: Map<number, string>;
  staffKey?: string;
}

/**
 * Fill a migrated database through `raw` (straight to sqld, not counted): `subscriptions` subscriptions 1..n to `<receiverUrl>/hook/<id>`
 * for every type (`["*"]`, a `webhook_event_types` row each) from event 0 on, then `events` `category.created` events 1..n; the dispatch
 * cursor of each schema (`webhook_fanout` before 0003, `webhook_dispatch` after) at 0, so every event is delivered. With `staff`, also
 * a staff account and an API key of it (as test/support/database-cost.ts `addKey` makes one).
 */
export async function seed(raw: Client, options: { subscriptions: number; events: number; receiverUrl: string; staff: boolean }): Promise<Seeded> {
  const now = new Date().toISOString();
  const secrets = new Map<number, string>();
  const statements: { sql: string; args: (string | number)[] }[] = [];
  for (let id = 1; id <= options.subscriptions; id++) {
    const secret = `whsec_${randomBytes(32).toString("base64")}`;
    secrets.set(id, secret);
    statements.push(
      {
        sql: "INSERT INTO webhooks (id, url, events, secret, status, created_at, last_event_id) VALUES (?, ?, '[\"*\"]', ?, 'active', ?, 0)",
        args: [id, `${options.receiverUrl}/hook/${id}`, secret, now],
      },
      { sql: "INSERT INTO webhook_event_types (type, webhook_id) VALUES ('*', ?)", args: [id] },
    );
  }
  if (options.events > 0)
    statements.push({
      sql: `WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < ?)
      INSERT INTO events (id, type, occurred_at, data) SELECT i, 'category.created', ?, json_object('id', i, 'name', 'C' || i) FROM seq`,
      args: [options.events, now],
    });
  const tables = new Set((await raw.execute("SELECT name FROM sqlite_master WHERE type = 'table'")).rows.map((row) => String(row.name)));
  // Migration 0001 made the fan-out cursor min(subscriptions' start), else the newest event, else 0: on an empty database 0; kept explicit.
  if (tables.has("webhook_fanout")) statements.push({ sql: "INSERT OR REPLACE INTO webhook_fanout (id, last_event_id) VALUES (1, 0)", args: [] });
  // The dispatch frontier at 0 (and, before 0006, its queue empty).
  const dispatchColumns = new Set((await raw.execute("SELECT name FROM pragma_table_info('webhook_dispatch')")).rows.map((row) => String(row.name)));
  const emptyQueue = dispatchColumns.has("queue") ? ", queue = '{}'" : "";
  if (tables.has("webhook_dispatch")) statements.push({ sql: `UPDATE webhook_dispatch SET event_id = 0${emptyQueue} WHERE id = 1`, args: [] });
  let staffKey: string | undefined;
  if (options.staff) {
    staffKey = `psk_${randomBytes(32).toString("base64url")}`;
    statements.push(
      {
        sql: "INSERT INTO accounts (name, email, email_key, role, created_at) VALUES ('bench staff', 'bench@staff.invalid', 'bench@staff.invalid', 'staff', ?)",
        args: [now],
      },
      {
        sql: "INSERT INTO api_keys (account_id, name, prefix, secret_hash, created_at) VALUES (last_insert_rowid(), 'bench', ?, ?, ?)",
        args: [staffKey.slice(0, 10), createHash("sha256").update(staffKey).digest("hex"), now],
      },
    );
  }
  await raw.batch(statements, "write");
  return { secrets, staffKey };
}
