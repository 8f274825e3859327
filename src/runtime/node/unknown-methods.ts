/**
 * Node: `CONNECT host:port` (Node's `connect` event) gets the app's 501 `not_implemented` Error object (RFC 9110 §15.6.2: no proxy here),
 * then the connection closes. Methods the parser does not know: src/runtime/node/client-error.ts.
 */
import type { Server } from "node:http";
import type { Duplex } from "node:stream";
import { notImplemented } from "../../http/errors";
import { answerRaw } from "./client-error";

/** Install the `connect` handler on `server`. */
export function answerUnknownMethods(server: Pick<Server, "on">): void {
  server.on("connect", (_request, socket: Duplex) => answerRaw(socket, notImplemented("CONNECT")));
}
