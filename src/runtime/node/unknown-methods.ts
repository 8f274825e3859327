/**
 * Node: `CONNECT host:port`, which Node's HTTP server emits as `connect` (with
 * no listener it just closes the connection), gets 501 `not_implemented`
 * (RFC 9110 §15.6.2: this server is no proxy), the same Error object the app
 * gives the methods it parses but never routes, then the connection is closed.
 * Methods the parser does not know at all are answered by
 * src/runtime/node/client-error.ts.
 */
import type { Server } from "node:http";
import type { Duplex } from "node:stream";
import { notImplemented } from "../../http/errors";
import { answerRaw } from "./client-error";

/** Install the `connect` handler described above on `server`. */
export function answerUnknownMethods(server: Pick<Server, "on">): void {
  server.on("connect", (_request, socket: Duplex) => answerRaw(socket, notImplemented("CONNECT")));
}
