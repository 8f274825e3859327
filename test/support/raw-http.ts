/**
 * One HTTP/1.1 request over a raw TCP socket, for methods `fetch` refuses to
 * send (CONNECT, TRACE, TRACK) or that are not tokens it knows: the request
 * line is written as given, the response is read until the server closes the
 * connection (`Connection: close` is sent) and parsed.
 */
import { connect } from "node:net";

export interface RawResponse {
  status: number;
  /** Header names in lower case. */
  headers: Record<string, string>;
  /** Parsed JSON body, or the text when not JSON ("" when empty). */
  body: any;
}

/**
 * Send `method target` to the server at `baseUrl` (http://host:port) and read the answer.
 * @throws Error when the server closes the connection without a status line, or after `timeoutMs`.
 */
export function rawRequest(baseUrl: string, method: string, target: string, timeoutMs = 10_000): Promise<RawResponse> {
  const { hostname, port } = new URL(baseUrl);
  return rawExchange(baseUrl, `${method} ${target} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nConnection: close\r\n\r\n`, timeoutMs);
}

/**
 * Write `bytes` as given (any request, well-formed or not) to the server at `baseUrl`
 * and read the answer until the server closes the connection.
 * @throws Error when the server closes the connection without a status line, or after `timeoutMs`.
 */
export function rawExchange(baseUrl: string, bytes: string | Buffer, timeoutMs = 10_000): Promise<RawResponse> {
  const { hostname, port } = new URL(baseUrl);
  const what = JSON.stringify(bytes.toString("latin1").slice(0, 60));
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => {
      socket.write(bytes);
    });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no complete answer to ${what} within ${timeoutMs} ms: ${JSON.stringify(Buffer.concat(chunks).toString("utf8"))}`));
    }, timeoutMs);
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    socket.on("close", () => {
      clearTimeout(timer);
      const parsed = parseResponse(Buffer.concat(chunks).toString("utf8"));
      if (parsed) resolve(parsed);
      else reject(new Error(`${what}: the connection closed without a response: ${JSON.stringify(Buffer.concat(chunks).toString("utf8"))}`));
    });
  });
}

/** One complete HTTP/1.1 response parsed from `text`, or undefined when there is none. */
export function parseResponse(text: string): RawResponse | undefined {
  const end = text.indexOf("\r\n\r\n");
  const match = /^HTTP\/1\.1 (\d{3})/.exec(text);
  if (!match || end < 0) return undefined;
  const headers: Record<string, string> = {};
  for (const line of text.slice(0, end).split("\r\n").slice(1)) {
    const colon = line.indexOf(":");
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let raw = text.slice(end + 4);
  // A chunked body (the Worker's responses): join the chunks.
  if (/chunked/i.test(headers["transfer-encoding"] ?? "")) {
    let joined = "";
    for (let rest = raw; ; ) {
      const lineEnd = rest.indexOf("\r\n");
      const size = parseInt(rest.slice(0, lineEnd), 16);
      if (!size) break;
      joined += rest.slice(lineEnd + 2, lineEnd + 2 + size);
      rest = rest.slice(lineEnd + 2 + size + 2);
    }
    raw = joined;
  }
  let body: unknown = raw;
  try {
    body = JSON.parse(raw);
  } catch {
    // not JSON: kept as text
  }
  return { status: Number(match[1]), headers, body };
}
