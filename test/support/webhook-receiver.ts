/**
 * A webhook receiver for tests: a node:http server on 127.0.0.1 (port 0) that
 * records every delivery and answers per path as told, plus `verified()`, which
 * checks a delivery the way a receiver would — with the public
 * `standardwebhooks` package and an independent node:crypto HMAC.
 */
import { createHmac } from "node:crypto";
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";
import { expect } from "vitest";
import type { EventBody } from "./event-log";

export interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  status: number;
}

/** The n-th request's answer: a status, a status once the promise settles, or none ("hang"). */
export type Behaviour = (count: number) => number | Promise<number> | "hang";

/** An HTTP receiver on 127.0.0.1:<random port>; each path answers as told (default 204). */
export class Receiver {
  readonly received: Received[] = [];
  private readonly behaviours = new Map<string, Behaviour>();
  private readonly counts = new Map<string, number>();
  private readonly hanging: ServerResponse[] = [];
  private readonly waiters: { path: string; count: number; resolve: () => void }[] = [];
  private port = 0;

  private constructor(private readonly server: Server) {}

  static async start(): Promise<Receiver> {
    const receiver: Receiver = new Receiver(
      createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on("data", (c: Buffer) => chunks.push(c));
        req.on("end", () => receiver.handle(req.url ?? "/", req.headers as Record<string, string>, Buffer.concat(chunks).toString("utf8"), res));
      }),
    );
    await new Promise<void>((resolve) => receiver.server.listen(0, "127.0.0.1", resolve));
    receiver.port = (receiver.server.address() as AddressInfo).port;
    return receiver;
  }

  private handle(path: string, headers: Record<string, string>, body: string, res: ServerResponse): void {
    const count = (this.counts.get(path) ?? 0) + 1;
    this.counts.set(path, count);
    const outcome = (this.behaviours.get(path) ?? (() => 204))(count);
    if (outcome === "hang") {
      this.hanging.push(res);
      return;
    }
    if (typeof outcome !== "number") {
      void outcome.then((status) => this.answer(path, headers, body, res, status));
      return;
    }
    this.answer(path, headers, body, res, outcome);
  }

  /** Record the request and answer it with `outcome`. */
  private answer(path: string, headers: Record<string, string>, body: string, res: ServerResponse, outcome: number): void {
    this.received.push({ path, headers, body, status: outcome });
    if (outcome >= 300 && outcome < 400) res.setHeader("Location", this.url("/elsewhere"));
    res.statusCode = outcome;
    res.end(outcome >= 400 ? "nope" : "thanks");
    for (const w of this.waiters.filter((w) => this.at(w.path).length >= w.count)) w.resolve();
  }

  /** Resolves once `count` requests to `path` have been received (event-driven, no polling). */
  waitFor(path: string, count: number): Promise<void> {
    if (this.at(path).length >= count) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ path, count, resolve }));
  }

  /** Requests to `path` that arrived, answered or still hanging. */
  arrivals(path: string): number {
    return this.counts.get(path) ?? 0;
  }

  /** Answer requests to `path` with `behaviour(n)` for the n-th request. */
  on(path: string, behaviour: Behaviour): this {
    this.behaviours.set(path, behaviour);
    return this;
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** Received requests to `path`, in arrival order. */
  at(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }

  async close(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Verify a delivery like a receiver would; returns the parsed Event. */
export function verified(r: Received, secret: string): EventBody {
  const id = r.headers["webhook-id"]!;
  const timestamp = r.headers["webhook-timestamp"]!;
  // The public reference implementation (Standard Webhooks) as the receiver.
  const payload = new Webhook(secret).verify(r.body, r.headers) as EventBody;
  // And an independent HMAC over `${id}.${timestamp}.${body}` with the base64 key after `whsec_`.
  const expected = createHmac("sha256", Buffer.from(secret.slice("whsec_".length), "base64"))
    .update(`${id}.${timestamp}.${r.body}`)
    .digest("base64");
  expect(r.headers["webhook-signature"]).toBe(`v1,${expected}`);
  expect(r.headers["content-type"]).toMatch(/^application\/json/);
  expect(id).toBe(`evt_${payload.id}`);
  expect(() => new Webhook(secret).verify(`${r.body} `, r.headers)).toThrow();
  return payload;
}
