/** Refusals that leave the body unread (RFC 9112 §9.6) drain up to `DRAIN_BYTES` and close the connection (docs/operations.md#refused-requests). */
import type { MiddlewareHandler } from "hono";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../http/context";

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

/** Read and discard the rest of `reader`'s body (`alreadyRead` bytes of it were read) until it ends, `DRAIN_BYTES` were read or `DRAIN_MS` passed. */
async function drain(reader: ReadableStreamDefaultReader<Uint8Array>, alreadyRead = 0): Promise<void> {
  const timer = setTimeout(() => void reader.cancel().catch(() => {}), DRAIN_MS);
  try {
    for (let read = alreadyRead; read < DRAIN_BYTES; ) {
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
  if (unread) await drain(request.body!.getReader());
  c.res.headers.set("Connection", "close");
});

/** Middleware refusing a body over `maxBytes` (413) by its `Content-Length`, else by reading it (kept for the handlers). @throws `tooLarge()`. */
export function limitBody(maxBytes: number, tooLarge: () => Error): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const method = c.req.method;
    if (method === "GET" || method === "HEAD" || method === "OPTIONS") return next();
    // A Content-Length frames the body exactly (RFC 9112 §6.2): no need to touch it (@hono/node-server would build a Request for it).
    const length = c.req.header("Content-Length");
    if (length !== undefined && c.req.header("Transfer-Encoding") === undefined) {
      if (Number(length) > maxBytes) throw tooLarge();
      return next();
    }
    const body = c.req.raw.body;
    if (!body) return next();
    const reader = body.getReader();
    const chunks: Uint8Array[] = [];
    let size = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) {
        await drain(reader, size);
        throw tooLarge();
      }
      chunks.push(value);
    }
    const whole = new Uint8Array(size);
    for (let offset = 0, i = 0; i < chunks.length; offset += chunks[i]!.byteLength, i++) whole.set(chunks[i]!, offset);
    c.req.raw = new Request(c.req.raw, { body: whole });
    return next();
  };
}
