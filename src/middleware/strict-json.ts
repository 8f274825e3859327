/** Strict JSON request bodies (docs/api.md#request-bodies-and-text): 415 for another coding or media type, 400 `invalid_json` (RFC 8259). */
import { parse, type AnyNode } from "@humanwhocodes/momoa";
import type { MiddlewareHandler } from "hono";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../http/context";
import { ApiError } from "../http/errors";
import { otherCoding } from "./transfer-codings";

/** `application/json`, or on PATCH `application/merge-patch+json` (group 1), with at most `charset=utf-8` (RFC 9110 §8.3.1). */
const ACCEPTED = /^application\/(merge-patch\+)?json[ \t]*(;[ \t]*charset[ \t]*=[ \t]*("utf-8"|utf-8)[ \t]*)?$/i;
/** Media types a client means as JSON: `application/json` (any parameters) and `*\/*+json`. */
const JSON_LIKE = /^[ \t]*([\w.+-]+\/[\w.+-]*\+json|application\/json)[ \t]*(;|$)/i;

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

function invalidJson(detail: string): ApiError {
  return new ApiError(400, "invalid_json", `The request body is not valid JSON: ${detail}`);
}

/** The first member name repeated within one object of `root`, or undefined. */
export function firstDuplicateKey(root: AnyNode): string | undefined {
  const stack: AnyNode[] = [root];
  while (stack.length > 0) {
    const node = stack.pop()!;
    if (node.type === "Document") stack.push(node.body);
    else if (node.type === "Array") for (const element of node.elements) stack.push(element.value);
    else if (node.type === "Object") {
      const seen = new Set<string>();
      for (const member of node.members) {
        const name = member.name.type === "String" ? member.name.value : member.name.name;
        if (seen.has(name)) return name;
        seen.add(name);
        stack.push(member.value);
      }
    }
  }
  return undefined;
}

/** Route middleware enforcing these rules, after the route's authorisation (src/middleware/security.ts: 401/403 first) and before its validators. */
export const strictJson: MiddlewareHandler<AppEnv> = createMiddleware<AppEnv>(async (c, next) => {
  const method = c.req.method;
  if (method === "GET" || method === "HEAD" || method === "OPTIONS") return next();
  const coding = otherCoding(c.req.header("Content-Encoding"), "identity");
  if (coding !== undefined) {
    const message = `Content-Encoding ${coding} is not supported: send the body without a content coding (identity).`;
    throw new ApiError(415, "unsupported_media_type", message, undefined, { "Accept-Encoding": "identity" });
  }
  const contentType = c.req.header("Content-Type");
  if (contentType === undefined || !JSON_LIKE.test(contentType)) return next();
  const accepted = ACCEPTED.exec(contentType.trim());
  if (!accepted || (accepted[1] !== undefined && method !== "PATCH")) {
    const types = method === "PATCH" ? "application/merge-patch+json or application/json" : "application/json";
    throw new ApiError(415, "unsupported_media_type", `The request body must be ${types} (optionally with charset=utf-8).`);
  }
  const bytes = await c.req.arrayBuffer();
  if (bytes.byteLength === 0) return next();
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw invalidJson("it is not valid UTF-8.");
  }
  let document: AnyNode;
  let value: unknown;
  try {
    document = parse(text, { mode: "json" });
    value = JSON.parse(text);
  } catch {
    throw invalidJson("syntax error.");
  }
  const duplicate = firstDuplicateKey(document);
  if (duplicate !== undefined) throw invalidJson(`the member name ${JSON.stringify(duplicate)} appears twice in one object.`);
  // Hono keeps a promise per body type read; without these, `c.req.json()` would convert the cached bytes through a new Response.
  const cache = c.req.bodyCache as Record<string, Promise<unknown>>;
  cache.text ??= Promise.resolve(text);
  cache.json = Promise.resolve(value);
  await next();
});
