/**
 * The subscribers' end of `npm run bench:webhooks -- --isolation` (bench/isolation.ts): one loopback receiver whose paths
 * `/hook/<name>` behave as the run says (answer at once or after a delay, answer 503, never answer), and the burst of writes whose
 * response times the lags are measured from.
 */
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** How one subscriber's endpoint answers: after `delayMs` with `status`, or (`hang`) never. */
export interface Behaviour {
  delayMs: number;
  status: number;
  hang?: boolean;
}

/** One delivery as a receiver saw it: the pet of its `pet.created` event and when it arrived (performance.now(), ms). */
export interface Arrival {
  petId: number;
  at: number;
}

export interface HookReceiver {
  url: string;
  /** Per subscriber name, each delivery in arrival order (duplicates included). */
  arrivals: Map<string, Arrival[]>;
  close(): Promise<void>;
}

/** Start the receiver; `behaviours` maps a subscriber name to how its path answers (a name not in it answers 204 at once). */
export async function startHookReceiver(behaviours: Map<string, Behaviour>): Promise<HookReceiver> {
  const arrivals = new Map<string, Arrival[]>();
  const waiting = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const at = performance.now();
      const name = /^\/hook\/([\w-]+)$/.exec(req.url ?? "")?.[1] ?? "?";
      const behaviour = behaviours.get(name) ?? { delayMs: 0, status: 204 };
      const event = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { type?: string; data?: { id?: number } };
      if (event.type === "pet.created") {
        const list = arrivals.get(name) ?? [];
        arrivals.set(name, list);
        list.push({ petId: Number(event.data?.id), at });
      }
      res.on("error", () => {});
      if (behaviour.hang) return void waiting.add(res);
      const answer = () => res.writeHead(behaviour.status).end();
      if (behaviour.delayMs > 0) setTimeout(answer, behaviour.delayMs);
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    arrivals,
    close: async () => {
      for (const res of waiting) res.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A JSON request to the service with the staff key; resolves with the status and the parsed body (or null). */
export async function call(base: string, key: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as unknown) : null };
}

/**
 * `writes` POST /pets (one category made first) from `clients` clients at once, as fast as the service answers; client i writes to
 * `bases()[i % n]` of the live instances (a write that fails because its instance was killed meanwhile is made again on a live one).
 * Resolves with each pet's response time (performance.now(), ms) by pet id.
 * @throws Error when a write is not answered 201.
 */
export async function burst(bases: () => string[], key: string, writes: number, clients: number): Promise<Map<number, number>> {
  const category = (await call(bases()[0]!, key, "POST", "/categories", { name: `Isolation ${Date.now()}` })).body as { id: number };
  const answered = new Map<number, number>();
  let next = 0;
  const write = async (i: number, n: number): Promise<{ status: number; body: unknown }> => {
    const live = bases();
    try {
      return await call(live[i % live.length]!, key, "POST", "/pets", { name: `Pet ${n}`, categoryId: category.id });
    } catch (error) {
      if (bases().length === live.length) throw error;
      return write(i, n);
    }
  };
  const client = async (i: number) => {
    while (next < writes) {
      const res = await write(i, next++);
      if (res.status !== 201) throw new Error(`POST /pets answered ${res.status}: ${JSON.stringify(res.body)}`);
      answered.set((res.body as { id: number }).id, performance.now());
    }
  };
  await Promise.all(Array.from({ length: clients }, (_, i) => client(i)));
  return answered;
}

/** The p-th percentile (nearest rank) of `values`, or NaN when empty. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}
