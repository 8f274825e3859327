/** Node: the edge's refusals as Error objects, and the writer that answers them with the app's headers and `Connection: close` (docs/operations.md#refused-requests). */
import { type IncomingMessage, type ServerResponse, STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { ApiError, type ErrorCode, notImplemented } from "../../http/errors";

/** Why the edge refused a request before the app: the `petstore_refusal_reason` label of `petstore_http_refusals_total` (docs/operations.md#refused-requests). */
export const REFUSAL_REASONS = [
  "bad_request_line",
  "header_too_large",
  "timeout",
  "method",
  "bad_host",
  "bad_target",
  "expectation",
  "unfinished",
  "shutting_down",
] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

/** One refusal: why, and the Error object that answers it. */
export interface Refusal {
  reason: RefusalReason;
  error: ApiError;
}

/** A refusal for `reason` answered with `status`, `code` and `message`, and with `Retry-After: 1` when `retry`. */
function refusal(reason: RefusalReason, status: ContentfulStatusCode, code: ErrorCode, message: string, retry = false): Refusal {
  return { reason, error: new ApiError(status, code, message, undefined, retry ? { "Retry-After": "1" } : undefined) };
}

/** A 400 refusal for `reason` saying `message`. */
const badRequest = (reason: RefusalReason, message: string) => refusal(reason, 400, "bad_request", message);

/** 417 for an `Expect` other than `100-continue`, which is the only expectation HTTP defines (RFC 9110 §10.1.1). */
export function expectationFailed(expect: string): Refusal {
  return refusal("expectation", 417, "expectation_failed", `Expect: ${expect} is not supported; the only expectation is 100-continue.`);
}

/** 429 for a request still arriving past its address's cap of `max`. */
export function tooManyUnfinished(max: number): Refusal {
  return refusal("unfinished", 429, "rate_limited", `This address already has ${max} requests still arriving; finish or close one first.`, true);
}

/** 503 for a request whose headers or body were still arriving when the server began to stop. */
export function shuttingDown(): Refusal {
  return refusal("shutting_down", 503, "service_unavailable", "The server is stopping and the request had not fully arrived; send the request again.", true);
}

/** 501 for a method no route of this server supports, refused before the app (`CONNECT`, or a token Node's parser does not know). */
export function unknownMethod(method: string): Refusal {
  return { reason: "method", error: notImplemented(method) };
}

/** The leading method token of a raw request (RFC 9110 §9.1: a token), or undefined. */
function methodOf(raw: Buffer | undefined): string | undefined {
  return raw ? /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,32}(?= )/.exec(raw.toString("latin1"))?.[0] : undefined;
}

/** The Error object for a parse error `code` of Node's parser (llhttp `HPE_*` or Node's own): 501 unknown method (RFC 9110 §15.6.2), 431 (RFC 6585 §5), 408, else 400. */
export function parseErrorAnswer(code: string | undefined, raw?: Buffer): Refusal {
  switch (code) {
    case "HPE_INVALID_METHOD":
      return unknownMethod(methodOf(raw) ?? "(unparsable)");
    case "HPE_HEADER_OVERFLOW":
      return refusal("header_too_large", 431, "header_too_large", "The request line and headers are too large (at most 16 KiB together).");
    case "ERR_HTTP_REQUEST_TIMEOUT":
    case "HPE_HEADERS_TIMEOUT":
      return refusal("timeout", 408, "request_timeout", "The request was not received in time.");
    default:
      return badRequest("bad_request_line", `The request is not a well-formed HTTP/1.1 message (${code ?? "parse error"}).`);
  }
}

/** The last Host value found valid: a client sends the same one on every request. */
let validHost: string | undefined;

/** True when `host` is a host name or address with an optional port, and nothing else. */
function isHostValue(host: string): boolean {
  if (host === validHost) return true;
  const url = URL.parse(`http://${host}`);
  const valid = url?.pathname === "/" && url.search === "" && url.hash === "" && url.username === "" && url.password === "";
  if (valid) validHost = host;
  return valid;
}

/** How many `Host` field lines `rawHeaders` (name, value, name, value, …) holds; Node keeps only the first in `headers`. */
const hostLines = (rawHeaders: string[]) => rawHeaders.filter((name, i) => i % 2 === 0 && name.length === 4 && name.toLowerCase() === "host").length;

/**
 * Why `req` cannot be served, or undefined: `Host` missing on HTTP/1.1, repeated or invalid (RFC 9112 §3.2, RFC 9110 §7.2), a target that
 * is no path (RFC 9112 §3.2.1) or holds a backslash; Node or the Hono adapter would answer these with an empty 400 or serve them wrongly.
 */
export function requestProblem(req: IncomingMessage): Refusal | undefined {
  const host = req.headers.host;
  if (host !== undefined && hostLines(req.rawHeaders) > 1) return badRequest("bad_host", "A request must not carry more than one Host header (RFC 9112 §3.2).");
  if (host === undefined)
    return req.httpVersion === "1.0" ? undefined : badRequest("bad_host", "An HTTP/1.1 request must carry a Host header (RFC 9112 §3.2).");
  if (!isHostValue(host)) return badRequest("bad_host", "The Host header must be a host name or address with an optional port (RFC 9110 §7.2).");
  const target = req.url ?? "";
  if (!target.startsWith("/")) return badRequest("bad_target", "The request target must be a path starting with / (origin-form, RFC 9112 §3.2.1).");
  const query = target.indexOf("?");
  if ((query < 0 ? target : target.slice(0, query)).includes("\\")) return badRequest("bad_target", "The request path must not contain a backslash.");
  return undefined;
}

/** The address a request without `Host` (HTTP/1.0) reached, as a Host value. */
export function localHost(req: IncomingMessage): string {
  const { localAddress = "127.0.0.1", localPort } = req.socket;
  const address = localAddress.includes(":") ? `[${localAddress}]` : localAddress;
  return localPort ? `${address}:${localPort}` : address;
}

export interface ErrorWriter {
  /** Answer `res` (not yet begun) with the refusal's Error object, then close its connection. */
  toResponse(res: ServerResponse, refusal: Refusal): void;
  /** Answer `socket`, which has no response in progress, with the refusal's Error object as raw HTTP/1.1, then close it. */
  toSocket(socket: Duplex, refusal: Refusal): void;
}

/**
 * The edge's one error writer: `appHeaders` (src/app.ts `responseHeaders({})`, what the app adds to its own Error answers) on every answer;
 * `refused` sees every refusal first, by reason (src/runtime/node/refusal-log.ts counts and logs them).
 */
export function errorWriter(appHeaders: readonly (readonly [string, string])[], refused: (refusal: Refusal) => void): ErrorWriter {
  const shared = Object.fromEntries(appHeaders);
  const parts = (error: ApiError) => {
    const requestId = crypto.randomUUID();
    const body = JSON.stringify(error.toBody(requestId));
    const head = { ...shared, ...error.headers, "Content-Length": String(Buffer.byteLength(body)), "X-Request-Id": requestId, Connection: "close" };
    return { head, body };
  };
  return {
    toResponse(res, refusal) {
      refused(refusal);
      const { head, body } = parts(refusal.error);
      res.writeHead(refusal.error.status, head).end(body);
    },
    toSocket(socket, refusal) {
      refused(refusal);
      if (!socket.writable) return void socket.destroy();
      const { head, body } = parts(refusal.error);
      const { status } = refusal.error;
      const lines = Object.entries(head).map(([name, value]) => `${name}: ${value}\r\n`);
      socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? "Error"}\r\n${lines.join("")}\r\n${body}`);
    },
  };
}
