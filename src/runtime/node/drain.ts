/**
 * Graceful stop of a Node HTTP server with keep-alive clients: every request that reached it is answered (`Connection: close`; 503 for one
 * whose headers or body are still arriving `bodyGraceMs` after the stop), and no connection is reset under a request the client may be sending
 * (RFC 9112 §9.6; how and why: docs/operations.md#stopping).
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { Server as NetServer, type Socket } from "node:net";
import { ApiError } from "../../http/errors";
import { answerRaw, writeError } from "./client-error";

/** 503 for a request whose headers or body were still arriving when the server began to stop. */
function shuttingDown(): ApiError {
  return new ApiError(503, "service_unavailable", "The server is stopping and the request had not fully arrived; send the request again.", undefined, {
    "Retry-After": "1",
  });
}

/** A connection's requests in progress and when it last became idle. */
interface Connection {
  busy: number;
  idleSince: number;
  /** `socket.bytesRead` when it became idle: more means a request has begun. */
  readAtIdle: number;
  timer?: NodeJS.Timeout;
}

export interface DrainOptions {
  /** How long a connection must be idle before the stop closes it, ms (default 1 000). */
  idleGraceMs?: number;
  /** How long a request (headers or body) still arriving at the stop may take before it is answered 503, ms (default 5 000: within the 10 s exit). */
  bodyGraceMs?: number;
  /** Clock in ms (default performance.now). */
  nowMs?: () => number;
}

export interface Drain {
  /** Stop accepting, answer with `Connection: close`, close connections idle for `idleGraceMs`; resolves once every connection has closed. Idempotent. */
  stop(): Promise<void>;
}

/** Track `server`'s connections and requests so that `stop()` can drain them; call before `listen` (its request listener is prepended). */
export function drainable(server: Server, options: DrainOptions = {}): Drain {
  const { idleGraceMs = 1_000, bodyGraceMs = 5_000, nowMs = () => performance.now() } = options;
  const connections = new Map<Socket, Connection>();
  /** Responses not yet begun when the stop came, with their requests. */
  const answering = new Map<ServerResponse, IncomingMessage>();
  let stopped: Promise<void> | undefined;

  /** Close `socket` once it has been idle for the grace, unless a request has begun meanwhile. */
  const closeWhenIdle = (socket: Socket, connection: Connection) => {
    if (connection.busy > 0) return;
    clearTimeout(connection.timer);
    const close = () => {
      if (connection.busy === 0 && socket.bytesRead === connection.readAtIdle) socket.destroy();
    };
    const wait = connection.idleSince + idleGraceMs - nowMs();
    if (wait <= 0) close();
    else connection.timer = setTimeout(close, wait).unref();
  };

  server.on("connection", (socket: Socket) => {
    const connection: Connection = { busy: 0, idleSince: nowMs(), readAtIdle: 0 };
    connections.set(socket, connection);
    socket.once("close", () => {
      clearTimeout(connection.timer);
      connections.delete(socket);
    });
    if (stopped) closeWhenIdle(socket, connection);
  });

  server.prependListener("request", (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket;
    const connection = connections.get(socket);
    if (stopped) res.setHeader("Connection", "close");
    else answering.set(res, req);
    if (!connection) return;
    connection.busy += 1;
    clearTimeout(connection.timer);
    res.once("close", () => {
      answering.delete(res);
      connection.busy -= 1;
      connection.idleSince = nowMs();
      connection.readAtIdle = socket.bytesRead;
      // An answer begun before the stop kept the connection open: it is idle now.
      if (stopped && !socket.destroyed) closeWhenIdle(socket, connection);
    });
  });

  return {
    stop: () => {
      stopped ??= new Promise<void>((resolve) => {
        // net.Server's close (stop accepting, call back once every connection has closed); http.Server's would also destroy idle ones at once.
        NetServer.prototype.close.call(server, () => resolve());
        const arriving = [...answering].filter(([res, req]) => !res.headersSent && !req.complete);
        for (const res of answering.keys()) if (!res.headersSent) res.setHeader("Connection", "close");
        answering.clear();
        // A request still arriving after the grace would hold the stop until the process is cut off: answer it, and close.
        const late = setTimeout(() => {
          for (const [res, req] of arriving) if (!res.headersSent && !req.complete) writeError(res, shuttingDown());
          // Headers still arriving: bytes read on a connection with no request in progress.
          for (const [socket, connection] of connections)
            if (connection.busy === 0 && socket.bytesRead > connection.readAtIdle) answerRaw(socket, shuttingDown());
        }, bodyGraceMs).unref();
        server.once("close", () => clearTimeout(late));
        for (const [socket, connection] of connections) closeWhenIdle(socket, connection);
      });
      return stopped;
    },
  };
}
