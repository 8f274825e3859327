/**
 * At most `max` unfinished requests per client address (docs/operations.md#refused-requests): a connection counts from when it opens
 * until its request has fully arrived (headers and body), and again while a later request on it arrives; one more is refused 429.
 */
import type { IncomingMessage, Server } from "node:http";
import type { Socket } from "node:net";
import { ApiError } from "../../http/errors";
import { answerRaw } from "./client-error";

/** 429 for a connection over the address's cap. */
function tooManyUnfinished(max: number): ApiError {
  return new ApiError(429, "rate_limited", `This address already has ${max} requests still arriving; finish or close one first.`, undefined, {
    "Retry-After": "1",
  });
}

/** Count, per remote address of `server`'s connections, the requests still arriving, and refuse a connection past `max` (0: no cap). */
export function capUnfinishedRequests(server: Server, max: number): void {
  if (max <= 0) return;
  const unfinished = new Map<string, number>();
  const add = (address: string, n: number) => {
    const count = (unfinished.get(address) ?? 0) + n;
    if (count > 0) unfinished.set(address, count);
    else unfinished.delete(address);
  };
  const counted = new WeakMap<Socket, boolean>();
  const release = (socket: Socket) => {
    if (!counted.get(socket)) return;
    counted.set(socket, false);
    add(socket.remoteAddress ?? "", -1);
  };
  server.on("connection", (socket: Socket) => {
    const address = socket.remoteAddress ?? "";
    if ((unfinished.get(address) ?? 0) >= max) {
      answerRaw(socket, tooManyUnfinished(max));
      return;
    }
    counted.set(socket, true);
    add(address, 1);
    socket.once("close", () => release(socket));
  });
  server.prependListener("request", (req: IncomingMessage) => {
    const socket = req.socket;
    if (!counted.get(socket)) {
      counted.set(socket, true);
      add(socket.remoteAddress ?? "", 1);
    }
    if (req.complete) release(socket);
    else req.once("end", () => release(socket));
  });
}
