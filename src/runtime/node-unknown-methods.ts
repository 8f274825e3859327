/**
 * Node: Error objects for the requests that Node's HTTP server answers itself,
 * before the app runs (API.md §5: every non-2xx response is an Error object).
 *
 * - A method Node's parser (llhttp) does not know (`FOO /pets HTTP/1.1`) is a
 *   parse error (`HPE_INVALID_METHOD`) emitted as `clientError`; by default
 *   Node answers a bare `400 Bad Request` with no body.
 * - `CONNECT host:port` is emitted as `connect`; with no listener Node just
 *   closes the connection.
 *
 * Both get 501 `not_implemented` (RFC 9110 §15.6.2: a method the server does
 * not support for any resource; this server is no proxy, so CONNECT is one),
 * the same Error object the app gives the methods it parses but never routes
 * (src/middleware/errors.ts), then the connection is closed. Other parse errors
 * keep Node's own answers (400, 431 for oversized headers, 408 on timeout;
 * https://nodejs.org/api/http.html#event-clienterror).
 */
import type { Server } from "node:http";
import type { Duplex } from "node:stream";
import { notImplemented } from "../middleware/errors";

/** The leading method token of a raw request (RFC 9110 §9.1: a token), or undefined. */
function methodOf(raw: Buffer | undefined): string | undefined {
  return raw ? /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,32}(?= )/.exec(raw.toString("latin1"))?.[0] : undefined;
}

/** Write a complete 501 Error response for `method` and close the connection. */
function answerNotImplemented(socket: Duplex, method: string): void {
  const requestId = crypto.randomUUID();
  const body = JSON.stringify(notImplemented(method).toBody(requestId));
  socket.end(
    "HTTP/1.1 501 Not Implemented\r\n" +
      "Content-Type: application/json; charset=utf-8\r\n" +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Request-Id: ${requestId}\r\n` +
      "X-Content-Type-Options: nosniff\r\n" +
      "Cache-Control: no-store\r\n" +
      "Connection: close\r\n\r\n" +
      body,
  );
}

/** Node's default `clientError` answer for the other parse errors (its status line, no body). */
function answerLikeNode(socket: Duplex, code: string | undefined): void {
  if (code === "ECONNRESET" || !socket.writable) {
    socket.destroy();
    return;
  }
  const status =
    code === "HPE_HEADER_OVERFLOW" ? "431 Request Header Fields Too Large" : code === "ERR_HTTP_REQUEST_TIMEOUT" ? "408 Request Timeout" : "400 Bad Request";
  socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\n\r\n`);
}

/** Install the `clientError` and `connect` handlers described above on `server`. */
export function answerUnknownMethods(server: Pick<Server, "on">): void {
  server.on("clientError", (error: Error & { code?: string; rawPacket?: Buffer }, socket: Duplex) => {
    if (error.code === "HPE_INVALID_METHOD" && socket.writable) answerNotImplemented(socket, methodOf(error.rawPacket) ?? "(unparsable)");
    else answerLikeNode(socket, error.code);
  });
  server.on("connect", (_request, socket: Duplex) => answerNotImplemented(socket, "CONNECT"));
}
