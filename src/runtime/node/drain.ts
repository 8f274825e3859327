/**
 * Graceful stop of a Node HTTP server with keep-alive clients: every request
 * that reached the server is answered, and no connection is reset under a
 * request the client may be sending (docs/operations.md "Stopping").
 *
 * `http.Server.close()` stops accepting and at once destroys every
 * connection with no request in progress, including those whose client has
 * just read an answer and is writing its next request: that request meets a
 * closed socket (ECONNRESET, or an end with no answer). A keep-alive
 * connection can only be ended without that race by an answer carrying
 * `Connection: close` (RFC 9112 §9.6). So `stop()`:
 *
 * - stops accepting connections (in a cluster the primary hands new ones to
 *   the other processes);
 * - answers every request with `Connection: close` from then on, the ones in
 *   progress included unless their headers are already out, and Node closes
 *   the connection after such an answer;
 * - closes a connection with no request in progress once it has been idle
 *   for `idleGraceMs` (1 s): a client that sends right after an answer gets
 *   its request answered, one that stays quiet is closed, at once when it
 *   was already idle that long;
 * - resolves once every connection has closed.
 *
 * A request whose bytes have begun to arrive is never cut: the connection is
 * not idle until it is answered (Node's `headersTimeout`/`requestTimeout`
 * still bound a request that never completes).
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { Server as NetServer, type Socket } from "node:net";

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
  /** Clock in ms (default performance.now). */
  nowMs?: () => number;
}

export interface Drain {
  /** Stop as described above; resolves once every connection has closed. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Track `server`'s connections and requests so that `stop()` can drain them.
 * Call before `listen`; the request listener is prepended, so it sees every
 * request before the app does.
 */
export function drainable(server: Server, options: DrainOptions = {}): Drain {
  const { idleGraceMs = 1_000, nowMs = () => performance.now() } = options;
  const connections = new Map<Socket, Connection>();
  const answering = new Set<ServerResponse>();
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
    else answering.add(res);
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
        // net.Server's close: stop accepting and call back once every connection has closed;
        // http.Server's own close() would also destroy the idle connections at once.
        NetServer.prototype.close.call(server, () => resolve());
        for (const res of answering) if (!res.headersSent) res.setHeader("Connection", "close");
        answering.clear();
        for (const [socket, connection] of connections) closeWhenIdle(socket, connection);
      });
      return stopped;
    },
  };
}
