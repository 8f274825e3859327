/**
 * Node: Error objects (docs/api.md#errors) for requests refused before the app, which Node answers with no body (https://nodejs.org/api/http.html#event-clienterror),
 * and 400 for those Node or the adapter would refuse empty or serve wrongly (`Host` missing, repeated or invalid, RFC 9112 §3.2; a target that is no path).
 * Every answer closes the connection (RFC 9112 §9.6); docs/operations.md#refused-requests.
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { ApiError, type ErrorCode, notImplemented } from "../../http/errors";

const REASONS: Record<number, string> = { 400: "Bad Request", 408: "Request Timeout", 431: "Request Header Fields Too Large", 501: "Not Implemented" };

/** 417 for an `Expect` other than `100-continue`, which is the only expectation HTTP defines (RFC 9110 §10.1.1). */
export function expectationFailed(expect: string | undefined): ApiError {
  return new ApiError(417, "expectation_failed", `Expect: ${expect ?? ""} is not supported; the only expectation is 100-continue.`);
}

/** The leading method token of a raw request (RFC 9110 §9.1: a token), or undefined. */
function methodOf(raw: Buffer | undefined): string | undefined {
  return raw ? /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,32}(?= )/.exec(raw.toString("latin1"))?.[0] : undefined;
}

/** The Error object for a parse error `code` of Node's parser (llhttp `HPE_*` or Node's own): 501 unknown method (RFC 9110 §15.6.2), 431 (RFC 6585 §5), 408, else 400. */
export function parseErrorAnswer(code: string | undefined, raw?: Buffer): ApiError {
  const refuse = (status: 400 | 408 | 431, errorCode: ErrorCode, message: string) => new ApiError(status, errorCode, message);
  switch (code) {
    case "HPE_INVALID_METHOD":
      return notImplemented(methodOf(raw) ?? "(unparsable)");
    case "HPE_HEADER_OVERFLOW":
      return refuse(431, "header_too_large", "The request line and headers are too large (at most 16 KiB together).");
    case "ERR_HTTP_REQUEST_TIMEOUT":
    case "HPE_HEADERS_TIMEOUT":
      return refuse(408, "request_timeout", "The request was not received in time.");
    default:
      return refuse(400, "bad_request", `The request is not a well-formed HTTP/1.1 message (${code ?? "parse error"}).`);
  }
}

/** Status line reason, headers and JSON body of `error`'s answer, with `Connection: close`. */
function errorParts(error: ApiError): { head: Record<string, string>; body: string } {
  const requestId = crypto.randomUUID();
  const body = JSON.stringify(error.toBody(requestId));
  const head = {
    ...error.headers,
    "Content-Type": "application/json; charset=utf-8",
    "Content-Length": String(Buffer.byteLength(body)),
    "X-Request-Id": requestId,
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
    Connection: "close",
  };
  return { head, body };
}

/** Answer `res` (not yet begun) with `error` as an Error object, and close its connection. */
export function writeError(res: ServerResponse, error: ApiError): void {
  const { head, body } = errorParts(error);
  res.writeHead(error.status, head).end(body);
}

/** The raw HTTP/1.1 response of `error` (for a socket with no response object). */
export function rawErrorResponse(error: ApiError): string {
  const { head, body } = errorParts(error);
  const lines = Object.entries(head).map(([name, value]) => `${name}: ${value}\r\n`);
  return `HTTP/1.1 ${error.status} ${REASONS[error.status] ?? "Error"}\r\n${lines.join("")}\r\n${body}`;
}

/** A socket whose current response has already begun cannot take another status line. */
function responseStarted(socket: Duplex): boolean {
  const current = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
  return Boolean(current?.headersSent);
}

/** Answer `socket` with `error` and close it; a reset or half-answered socket is just destroyed. */
export function answerRaw(socket: Duplex, error: ApiError): void {
  if (!socket.writable || responseStarted(socket)) {
    socket.destroy();
    return;
  }
  socket.end(rawErrorResponse(error));
}

/** The last Host value found valid: a client sends the same one on every request. */
let validHost: string | undefined;

/** True when `host` is a host name or address with an optional port, and nothing else. */
function isHostValue(host: string): boolean {
  if (host === validHost) return true;
  try {
    const url = new URL(`http://${host}`);
    const valid = url.pathname === "/" && url.search === "" && url.hash === "" && url.username === "" && url.password === "";
    if (valid) validHost = host;
    return valid;
  } catch {
    return false;
  }
}

/** How many `Host` field lines `rawHeaders` (name, value, name, value, …) holds; Node keeps only the first in `headers`. */
function hostLines(rawHeaders: string[]): number {
  let lines = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (name.length === 4 && name.toLowerCase() === "host") lines += 1;
  }
  return lines;
}

/** Why the request cannot be served (checked before the Hono adapter, which would answer an empty 400), or undefined. */
function requestProblem(req: IncomingMessage): string | undefined {
  const host = req.headers.host;
  if (host !== undefined && hostLines(req.rawHeaders) > 1) return "A request must not carry more than one Host header (RFC 9112 §3.2).";
  if (host === undefined) return req.httpVersion === "1.0" ? undefined : "An HTTP/1.1 request must carry a Host header (RFC 9112 §3.2).";
  if (!isHostValue(host)) return "The Host header must be a host name or address with an optional port (RFC 9110 §7.2).";
  const target = req.url ?? "";
  if (!target.startsWith("/")) return "The request target must be a path starting with / (origin-form, RFC 9112 §3.2.1).";
  const query = target.indexOf("?");
  if ((query < 0 ? target : target.slice(0, query)).includes("\\")) return "The request path must not contain a backslash.";
  return undefined;
}

/** The address a request without `Host` reached, as a Host value. */
function localHost(req: IncomingMessage): string {
  const { localAddress = "127.0.0.1", localPort } = req.socket;
  const address = localAddress.includes(":") ? `[${localAddress}]` : localAddress;
  return localPort ? `${address}:${localPort}` : address;
}

/** Install the `clientError` listener and the request checks in front of the `request` listeners on `server`; call after the app's listener, before `listen`. */
export function answerClientErrors(server: Server): void {
  server.on("clientError", (error: Error & { code?: string; rawPacket?: Buffer }, socket: Duplex) => {
    if (error.code === "ECONNRESET") socket.destroy();
    else answerRaw(socket, parseErrorAnswer(error.code, error.rawPacket));
  });
  // Node answers an unknown Expect itself with a bare 417 that keeps the connection; this is the Error object, and it closes.
  server.on("checkExpectation", (req: IncomingMessage, res: ServerResponse) => {
    writeError(res, expectationFailed(req.headers.expect));
  });
  // Node's own Host check (`requireHostHeader`) answers with an empty body; `requestProblem` answers with an Error object.
  (server as Server & { requireHostHeader: boolean }).requireHostHeader = false;
  const listeners = server.listeners("request") as ((req: IncomingMessage, res: ServerResponse) => void)[];
  server.removeAllListeners("request");
  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    const problem = requestProblem(req);
    if (problem) {
      writeError(res, new ApiError(400, "bad_request", problem));
      return;
    }
    req.headers.host ??= localHost(req);
    for (const listener of listeners) listener.call(server, req, res);
  });
}
