/**
 * A refusal that leaves the request body unread (RFC 9112 §9.6): the answer
 * says `Connection: close`, so a keep-alive client never sends its next
 * request on a connection the server is about to close, and up to
 * `DRAIN_BYTES` of the unread body are read and discarded first (for at most
 * `DRAIN_MS`), so that closing does not reset the connection before the
 * client has read the answer. Every 413 qualifies (its body was refused
 * unread or half read); any other answer of 400 and above does when the
 * request declared a body the app never read.
 */
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../lib/context";

/** Most bytes of a refused body read and discarded before answering. */
export const DRAIN_BYTES = 8 * 1024 * 1024;
/** Longest time spent reading a refused body, ms. */
export const DRAIN_MS = 2_000;

/** True when the request declares a body (RFC 9112 §6.3: Transfer-Encoding, or a Content-Length above 0). */
function declaresBody(headers: Headers): boolean {
  if (headers.has("Transfer-Encoding")) return true;
  const length = headers.get("Content-Length");
  return length !== null && length.trim() !== "0";
}

/** Read and discard `body` until it ends, `DRAIN_BYTES` were read or `DRAIN_MS` passed. */
async function drain(body: ReadableStream<Uint8Array>): Promise<void> {
  const reader = body.getReader();
  const timer = setTimeout(() => void reader.cancel().catch(() => {}), DRAIN_MS);
  try {
    for (let read = 0; read < DRAIN_BYTES; ) {
      const { done, value } = await reader.read();
      if (done) break;
      read += value.byteLength;
    }
  } catch {
    // The client went away or the timer cancelled the read: nothing left to drain.
  } finally {
    clearTimeout(timer);
    reader.releaseLock();
  }
}

/** Global middleware, registered before anything that may refuse a request with a body. */
export const closeAfterUnreadBody = createMiddleware<AppEnv>(async (c, next) => {
  await next();
  const status = c.res.status;
  if (status < 400) return;
  const request = c.req.raw;
  const unread = !request.bodyUsed && request.body !== null && declaresBody(request.headers);
  if (status !== 413 && !unread) return;
  if (unread) await drain(request.body!);
  c.res.headers.set("Connection", "close");
});
