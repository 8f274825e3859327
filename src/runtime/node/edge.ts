/** Node's front door: the `http.Server` whose requests meet `nodeEdge`'s guards in order, then the app (docs/architecture.md#node-the-edge-before-the-app). */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { Server as NetServer, type Socket } from "node:net";
import type { Duplex } from "node:stream";
import { type ErrorWriter, expectationFailed, localHost, parseErrorAnswer, type Refusal, requestProblem, shuttingDown, tooManyUnfinished } from "./refusals";
import { unknownMethod } from "./refusals";

/** One step of the way in: answer `res`, or call `next` to pass the request on. */
export type Guard = (req: IncomingMessage, res: ServerResponse, next: () => void) => void;

export interface EdgeOptions {
  /** The app's request listener (@hono/node-server's `getRequestListener`), after every guard. */
  app: (req: IncomingMessage, res: ServerResponse) => unknown;
  /** Answers a read-cache hit or calls `next` (src/runtime/node/cache-hits.ts). */
  cacheHit: Guard;
  /** Writes every refusal (src/runtime/node/refusals.ts `errorWriter`). */
  errors: ErrorWriter;
  /** Longest time a request's headers, and its whole body, may take to arrive, ms (REQUEST_TIMEOUT_MS; then 408, RFC 9110 §15.5.9). */
  requestTimeoutMs: number;
  /** Requests one client address may have still arriving after `graceMs` (MAX_UNFINISHED_PER_ADDRESS; 0: no cap; then 429). */
  maxUnfinishedPerAddress: number;
}

export interface Edge {
  /** The server; `listen` on it. */
  server: Server;
  /** Stop accepting; answer the requests that reached the server with `Connection: close`; close idle connections. Resolves once all closed; idempotent. */
  stop(): Promise<void>;
}

/** What the edge knows of one connection. */
interface Connection {
  readonly address: string;
  /** The request being answered and its answer, if any. */
  req?: IncomingMessage;
  res?: ServerResponse;
  /** When the request now arriving (headers or body) began, ms; undefined while none is. */
  arrivingSince?: number;
  /** It counts for its address (past the grace). */
  counted: boolean;
  /** `socket.bytesRead` and the time when the last answer ended: more bytes mean the next request has begun. */
  readAtIdle: number;
  idleSince: number;
}

/** True when `req` declares a body (RFC 9112 §6.3); one without has arrived with its headers. */
const declaresBody = (req: IncomingMessage) => req.headers["transfer-encoding"] !== undefined || Number(req.headers["content-length"] ?? 0) > 0;

/** ms: a request still arriving after `graceMs` counts for its address; at a stop, idle `idleGraceMs` closes, arriving after `stopGraceMs` is 503. */
const GRACE = { graceMs: 1_000, idleGraceMs: 1_000, stopGraceMs: 5_000 };
const nowMs = () => performance.now();

/** The only expectation HTTP defines (RFC 9110 §10.1.1), as Node recognises it. */
const CONTINUE = /(?:^|\W)100-continue(?:$|\W)/i;

/**
 * The Node server with its guards, in the order a request meets them:
 * 1. request timeout: headers or a body slower than `requestTimeoutMs` → 408 (Node's timers; a message Node cannot parse → 400, 431 or 501);
 * 2. per-address cap: a request (headers or body) still arriving after `graceMs` counts for its address; past the cap → 429;
 * 3. stop and drain: once stopping, every answer says `Connection: close`, idle connections close, a request still arriving → 503;
 * 4. a well-formed `Host` and target → else 400; 5. the expectation → else 417 (the codings, 501 and 415, are the app's on both runtimes);
 * 6. read-cache hits; 7. the app.
 */
export function nodeEdge(options: EdgeOptions): Edge {
  const { app, cacheHit, errors, requestTimeoutMs, maxUnfinishedPerAddress: max } = options;
  const { graceMs, idleGraceMs, stopGraceMs } = GRACE;
  const connections = new Map<Socket, Connection>();
  const counts = new Map<string, number>();
  let stoppedAt: number | undefined;
  let stopped: Promise<void> | undefined;

  /** The request on `connection` has fully arrived (or its socket closed): it no longer counts. */
  const arrived = (connection: Connection) => {
    connection.arrivingSince = undefined;
    if (!connection.counted) return;
    connection.counted = false;
    const left = (counts.get(connection.address) ?? 1) - 1;
    if (left > 0) counts.set(connection.address, left);
    else counts.delete(connection.address);
  };

  /** 2: the request has its headers; it counts until its body has arrived. 3: the drain sees every answer. */
  const track: Guard = (req, res, next) => {
    const connection = connections.get(req.socket);
    if (connection) {
      connection.req = req;
      connection.res = res;
      if (req.complete || !declaresBody(req)) arrived(connection);
      else {
        connection.arrivingSince ??= nowMs();
        req.once("end", () => arrived(connection));
      }
      res.once("close", () => {
        if (connection.res !== res) return;
        connection.req = connection.res = undefined;
        connection.readAtIdle = req.socket.bytesRead;
        connection.idleSince = nowMs();
      });
    }
    if (stoppedAt !== undefined) res.setHeader("Connection", "close");
    next();
  };
  /** 4: a request Node or the adapter would answer with an empty 400 or serve wrongly. */
  const wellFormed: Guard = (req, res, next) => {
    const problem = requestProblem(req);
    if (problem) return errors.toResponse(res, problem);
    req.headers.host ??= localHost(req);
    next();
  };
  /** 5: Node would answer an unknown `Expect` with a bare 417 that keeps the connection. */
  const expectation: Guard = (req, res, next) => {
    const expect = req.headers.expect;
    if (expect !== undefined && !CONTINUE.test(expect)) return errors.toResponse(res, expectationFailed(expect));
    next();
  };
  const guards: Guard[] = [track, wellFormed, expectation, cacheHit, (req, res) => void app(req, res)];
  const run = (req: IncomingMessage, res: ServerResponse, at = 0): void => guards[at]!(req, res, () => run(req, res, at + 1));

  /** A raw refusal on `socket`, unless an answer has begun there (then it can only be closed). */
  const refuseRaw = (socket: Duplex, refusal: Refusal) => {
    if (connections.get(socket as Socket)?.res?.headersSent) socket.destroy();
    else errors.toSocket(socket, refusal);
  };

  /** 2 and 3, for every connection: count the requests still arriving after the grace; once stopping, close idle ones and refuse late ones. */
  const sweep = () => {
    if (max <= 0 && stoppedAt === undefined) return;
    const now = nowMs();
    const late = stoppedAt !== undefined && now - stoppedAt >= stopGraceMs;
    for (const [socket, connection] of connections) {
      const begun = socket.bytesRead > connection.readAtIdle;
      if (!connection.res && begun) connection.arrivingSince ??= now;
      const since = connection.arrivingSince;
      if (max > 0 && since !== undefined && !connection.counted && now - since >= graceMs) {
        connection.counted = true;
        const count = (counts.get(connection.address) ?? 0) + 1;
        counts.set(connection.address, count);
        if (count > max) {
          arrived(connection);
          refuseRaw(socket, tooManyUnfinished(max));
          continue;
        }
      }
      if (stoppedAt === undefined) continue;
      const { req, res } = connection;
      if (!res && !begun && now - connection.idleSince >= idleGraceMs) socket.destroy();
      else if (late && res && req && !res.headersSent && !req.complete) errors.toResponse(res, shuttingDown());
      else if (late && !res && begun) refuseRaw(socket, shuttingDown());
    }
  };

  const server = createServer(
    // Node checks the request timeout every second at most; its own Host check would answer with an empty body (`wellFormed` does it).
    {
      requestTimeout: requestTimeoutMs,
      headersTimeout: requestTimeoutMs,
      connectionsCheckingInterval: Math.min(1000, requestTimeoutMs),
      requireHostHeader: false,
    },
    run,
  );
  server.on("checkExpectation", run);
  server.on("connection", (socket: Socket) => {
    const now = nowMs();
    connections.set(socket, { address: socket.remoteAddress ?? "", arrivingSince: now, counted: false, readAtIdle: 0, idleSince: now });
    socket.once("close", () => {
      arrived(connections.get(socket)!);
      connections.delete(socket);
    });
  });
  // 1: what Node's parser refuses, and its timeouts; `CONNECT host:port` (no proxy here, RFC 9110 §15.6.2).
  server.on("clientError", (error: Error & { code?: string; rawPacket?: Buffer }, socket: Duplex) => {
    if (error.code === "ECONNRESET") socket.destroy();
    else refuseRaw(socket, parseErrorAnswer(error.code, error.rawPacket));
  });
  server.on("connect", (_req: IncomingMessage, socket: Duplex) => refuseRaw(socket, unknownMethod("CONNECT")));
  const ticks = setInterval(sweep, Math.min(graceMs, idleGraceMs) / 4).unref();
  server.once("close", () => clearInterval(ticks));

  return {
    server,
    stop: () => {
      stopped ??= new Promise<void>((resolve) => {
        stoppedAt = nowMs();
        // net.Server's close (stop accepting, call back once every connection has closed); http.Server's would also destroy idle ones at once.
        NetServer.prototype.close.call(server, () => resolve());
        for (const { res } of connections.values()) if (res && !res.headersSent) res.setHeader("Connection", "close");
        sweep();
      });
      return stopped;
    },
  };
}
