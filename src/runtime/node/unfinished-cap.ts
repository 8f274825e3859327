/**
 * At most `max` slow requests per client address (docs/operations.md#refused-requests): a connection whose request has not fully
 * arrived (headers and body) `GRACE_MS` after it began counts for its address until it has; one past `max` is answered 429 and closed.
 * Requests that arrive within the grace never count, so a burst of connections from one client is not refused. On a keep-alive connection
 * the next request begins when its first bytes are read after an answer (checked every grace while the connection is idle).
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { ApiError } from "../../http/errors";
import { answerRaw } from "./client-error";

/** How long a request may take to arrive before it counts as slow, ms. */
export const GRACE_MS = 1_000;

/** 429 for a slow request past the address's cap. */
function tooManyUnfinished(max: number): ApiError {
  return new ApiError(429, "rate_limited", `This address already has ${max} requests still arriving; finish or close one first.`, undefined, {
    "Retry-After": "1",
  });
}

/** A connection's request in progress: its grace timer, and whether it counts for its address. */
interface Arriving {
  timer?: NodeJS.Timeout;
  counted: boolean;
}

/** Count, per remote address of `server`'s connections, the requests still arriving after the grace; refuse those past `max` (0: no cap). */
export function capUnfinishedRequests(server: Server, max: number, graceMs = GRACE_MS): void {
  if (max <= 0) return;
  const slow = new Map<string, number>();
  const arriving = new WeakMap<Socket, Arriving>();
  /** Idle keep-alive connections: the timer that looks for their next request's first bytes. */
  const idle = new WeakMap<Socket, NodeJS.Timeout>();
  const add = (address: string, n: number) => {
    const count = (slow.get(address) ?? 0) + n;
    if (count > 0) slow.set(address, count);
    else slow.delete(address);
    return count;
  };
  /** The request on `socket` has arrived (or the socket closed): it no longer counts. */
  const arrived = (socket: Socket) => {
    const state = arriving.get(socket);
    if (!state) return;
    arriving.delete(socket);
    clearTimeout(state.timer);
    if (state.counted) add(socket.remoteAddress ?? "", -1);
  };
  /** A request begins arriving on `socket`: after the grace, it counts, and past `max` it is refused. */
  const begins = (socket: Socket) => {
    if (arriving.has(socket)) return;
    const state: Arriving = { counted: false };
    arriving.set(socket, state);
    state.timer = setTimeout(() => {
      state.counted = true;
      if (add(socket.remoteAddress ?? "", 1) > max) {
        arrived(socket);
        answerRaw(socket, tooManyUnfinished(max));
      }
    }, graceMs).unref();
  };
  /** After an answer, `socket` waits for its next request: bytes read since then begin one (its headers have not arrived). */
  const watchIdle = (socket: Socket) => {
    const readAtIdle = socket.bytesRead;
    const look = () => {
      if (socket.destroyed) return;
      if (socket.bytesRead > readAtIdle) begins(socket);
      else idle.set(socket, setTimeout(look, graceMs).unref());
    };
    idle.set(socket, setTimeout(look, graceMs).unref());
  };
  server.on("connection", (socket: Socket) => {
    begins(socket);
    socket.once("close", () => {
      clearTimeout(idle.get(socket));
      arrived(socket);
    });
  });
  server.prependListener("request", (req: IncomingMessage, res: ServerResponse) => {
    clearTimeout(idle.get(req.socket));
    res.once("finish", () => {
      if (!req.socket.destroyed) watchIdle(req.socket);
    });
    if (req.complete) arrived(req.socket);
    else {
      begins(req.socket);
      req.once("end", () => arrived(req.socket));
    }
  });
}
