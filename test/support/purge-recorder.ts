/**
 * Records the Worker's cache purges in the Worker suite. Local workerd has no
 * `ctx.cache` (Workers Cache is not emulated), so the Worker POSTs each purge
 * call it would make (a batch: `{id, tags, parts: [{source, tags}]}`, the
 * sources being request ids; src/runtime/workers/purge-budget.ts) to
 * `CACHE_PURGE_CAPTURE_URL` instead; this node:http server on 127.0.0.1 keeps
 * them in order, and `GET /purges?requestId=…` lists the calls that purged for
 * one request (test files run in other processes than the global setup that
 * owns the server).
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** The Worker suite's delay of a write's second purge (CACHE_PURGE_REPEAT_MS), ms. */
export const PURGE_REPEAT_MS = 1_500;

export interface PurgeRecord {
  id: number;
  tags: string[];
  parts: { source: string; tags: string[] }[];
}

export interface PurgeRecorder {
  /** Where the Worker posts purges. */
  url: string;
  stop(): Promise<void>;
}

/** Start the recorder on a free loopback port. */
export async function startPurgeRecorder(): Promise<PurgeRecorder> {
  const records: PurgeRecord[] = [];
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://recorder.invalid");
    if (req.method === "GET") {
      const requestId = url.searchParams.get("requestId");
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(JSON.stringify(records.filter((r) => requestId === null || r.parts.some((p) => p.source === requestId))));
      return;
    }
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      records.push(JSON.parse(Buffer.concat(chunks).toString("utf8")) as PurgeRecord);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/purges`,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The purge calls, in order, that purged tags of one request (by its `X-Request-Id`). */
export async function purgesOf(recorderUrl: string, requestId: string): Promise<PurgeRecord[]> {
  const res = await fetch(`${recorderUrl}?requestId=${encodeURIComponent(requestId)}`);
  return (await res.json()) as PurgeRecord[];
}
