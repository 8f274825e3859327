/**
 * A keep-alive HTTP/1.1 client over raw TCP sockets that sends continuously
 * and records what happened to every request it wrote, for tests of how a
 * server ends its connections (test/runtime/worker-drain.test.ts).
 *
 * One request at a time per connection: the next one is written as soon as
 * the previous answer is complete, unless that answer said
 * `Connection: close` or the server has closed its side (`end`), in which
 * case the connection is left for the server to close and a new one is
 * opened. Nothing is ever written after the client has seen the server's
 * close, so a request that gets no complete answer, or an error on a socket
 * with a request outstanding, is the server's doing.
 */
import { connect, type Socket } from "node:net";
import { readFileSync, readdirSync, readlinkSync } from "node:fs";

/** One request as bytes; `n` counts the requests of this client from 0. */
export type RequestMaker = (n: number) => string;

/** What one connection saw. */
export interface ConnectionRecord {
  /** The client's local port (identifies the connection on the server side). */
  localPort: number;
  written: number;
  answered: number;
  /** Answers that carried `Connection: close`. */
  closeAnswers: number;
  /** The server closed its side (FIN) with no request outstanding. */
  cleanClose: boolean;
  /** Requests written that never got a complete answer. */
  unanswered: number;
  /** Socket errors (ECONNRESET, EPIPE, …) and with how many requests outstanding. */
  errors: { code: string; outstanding: number }[];
}

/** The length and head of a complete response at the start of `buffer` (Content-Length or chunked), or undefined. */
function responseLength(buffer: Buffer): { length: number; head: string } | undefined {
  const end = buffer.indexOf("\r\n\r\n");
  if (end < 0) return undefined;
  const head = buffer.subarray(0, end).toString("latin1");
  const bodyStart = end + 4;
  const contentLength = /\r\ncontent-length:\s*(\d+)/i.exec(head);
  if (contentLength) {
    const length = bodyStart + Number(contentLength[1]);
    return buffer.length >= length ? { length, head } : undefined;
  }
  if (/\r\ntransfer-encoding:\s*chunked/i.test(head)) {
    for (let at = bodyStart; ; ) {
      const lineEnd = buffer.indexOf("\r\n", at);
      if (lineEnd < 0) return undefined;
      const size = Number.parseInt(buffer.subarray(at, lineEnd).toString("latin1"), 16);
      const next = lineEnd + 2 + size + 2;
      if (size === 0) return buffer.length >= next ? { length: next, head } : undefined;
      if (buffer.length < next) return undefined;
      at = next;
    }
  }
  return { length: bodyStart, head }; // no body (204, 304)
}

/**
 * A client that keeps one connection busy at a time, reconnecting when the
 * server closes it, until `finish()`; every connection is recorded.
 */
export class KeepAliveClient {
  readonly connections: ConnectionRecord[] = [];
  /** Complete answers on every connection so far. */
  answered = 0;
  private sent = 0;
  private finishing = false;
  private socket: Socket | undefined;
  private done: () => void = () => {};
  private readonly closed: Promise<void>;
  private readonly watchers: { count: number; resolve: () => void }[] = [];

  constructor(
    private readonly port: number,
    private readonly makeRequest: RequestMaker,
  ) {
    this.closed = new Promise((resolve) => (this.done = resolve));
    this.open();
  }

  /** Resolves once `count` answers have arrived in all. */
  answers(count: number): Promise<void> {
    if (this.answered >= count) return Promise.resolve();
    return new Promise((resolve) => this.watchers.push({ count, resolve }));
  }

  /** The local port of the connection open now, if any. */
  currentPort(): number | undefined {
    return this.socket?.localPort;
  }

  /** Stop sending: the request outstanding is awaited, then the client closes; resolves once closed. */
  finish(): Promise<void> {
    this.finishing = true;
    const record = this.connections.at(-1);
    if (this.socket && record && record.written === record.answered) this.socket.end();
    return this.closed;
  }

  private open(): void {
    const socket = connect(this.port, "127.0.0.1");
    this.socket = socket;
    let record: ConnectionRecord | undefined;
    let pending = Buffer.alloc(0);
    let ended = false;
    let lastAnswerClosed = false;
    const send = () => {
      record!.written += 1;
      socket.write(this.makeRequest(this.sent++));
    };
    socket.once("connect", () => {
      record = { localPort: socket.localPort!, written: 0, answered: 0, closeAnswers: 0, cleanClose: false, unanswered: 0, errors: [] };
      this.connections.push(record);
      if (this.finishing) socket.end();
      else send();
    });
    socket.on("data", (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      for (let found = responseLength(pending); found; found = responseLength(pending)) {
        pending = pending.subarray(found.length);
        record!.answered += 1;
        this.answered += 1;
        lastAnswerClosed = /\r\nconnection:\s*close/i.test(found.head);
        if (lastAnswerClosed) record!.closeAnswers += 1;
        for (const watcher of this.watchers.filter((w) => this.answered >= w.count)) {
          this.watchers.splice(this.watchers.indexOf(watcher), 1);
          watcher.resolve();
        }
      }
      if (record!.written > record!.answered || ended || lastAnswerClosed) return;
      if (this.finishing) socket.end();
      else send();
    });
    socket.on("end", () => {
      ended = true;
      if (record && record.written === record.answered) record.cleanClose = true;
      socket.end();
    });
    socket.on("error", (error: NodeJS.ErrnoException) => {
      record?.errors.push({ code: error.code ?? error.message, outstanding: record.written - record.answered });
    });
    socket.on("close", () => {
      if (record) record.unanswered = record.written - record.answered;
      if (this.finishing) this.done();
      else this.open();
    });
  }
}

/** The pid among `pids` that holds the server side of the TCP connection from 127.0.0.1:`clientPort` (Linux /proc). */
export function serverProcessOf(clientPort: number, serverPort: number, pids: number[]): number | undefined {
  const hexPort = (port: number) => port.toString(16).toUpperCase().padStart(4, "0");
  const inodes = new Set<string>();
  for (const line of readFileSync("/proc/net/tcp", "utf8").split("\n").slice(1)) {
    const fields = line.trim().split(/\s+/);
    if (fields.length < 10) continue;
    if (fields[1]!.endsWith(`:${hexPort(serverPort)}`) && fields[2]!.endsWith(`:${hexPort(clientPort)}`)) inodes.add(`socket:[${fields[9]}]`);
  }
  return pids.find((pid) => {
    try {
      return readdirSync(`/proc/${pid}/fd`).some((fd) => {
        try {
          return inodes.has(readlinkSync(`/proc/${pid}/fd/${fd}`));
        } catch {
          return false;
        }
      });
    } catch {
      return false;
    }
  });
}

/** One keep-alive connection driven by hand: write bytes, await answers, see how it ended. */
export class RawConnection {
  readonly socket: Socket;
  /** Resolves with how the connection ended: a clean close by the server, or an error code. */
  readonly ended: Promise<{ clean: boolean; error?: string; unread: string }>;
  private pending = Buffer.alloc(0);
  private waiting: ((answer: { status: number; head: string }) => void)[] = [];

  private constructor(socket: Socket) {
    this.socket = socket;
    this.ended = new Promise((resolve) => {
      let error: string | undefined;
      let clean = false;
      socket.on("end", () => {
        clean = true;
        socket.end();
      });
      socket.on("error", (e: NodeJS.ErrnoException) => (error = e.code ?? e.message));
      socket.on("close", () => resolve({ clean: clean && !error, error, unread: this.pending.toString("latin1") }));
    });
    socket.on("data", (chunk: Buffer) => {
      this.pending = Buffer.concat([this.pending, chunk]);
      for (let found = responseLength(this.pending); found && this.waiting.length > 0; found = responseLength(this.pending)) {
        this.pending = this.pending.subarray(found.length);
        this.waiting.shift()!({ status: Number(found.head.slice(9, 12)), head: found.head });
      }
    });
  }

  /** A connection to 127.0.0.1:`port`, once connected. */
  static open(port: number): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, "127.0.0.1", () => resolve(new RawConnection(socket)));
      socket.once("error", reject);
    });
  }

  /** The local port (identifies the connection on the server side). */
  get localPort(): number {
    return this.socket.localPort!;
  }

  /** Write `bytes`; the returned promise is the next complete answer on this connection. */
  send(bytes: string): Promise<{ status: number; head: string }> {
    const answer = new Promise<{ status: number; head: string }>((resolve) => this.waiting.push(resolve));
    this.socket.write(bytes);
    return answer;
  }

  /** Write `bytes` without waiting for an answer (the rest of a request already begun). */
  write(bytes: string): void {
    this.socket.write(bytes);
  }
}
