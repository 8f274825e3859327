/** Transfer codings a request may use (docs/api.md#errors): `chunked` only; any other is 501 (RFC 9112 §6.1), its body left unread. */
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../http/context";
import { ApiError } from "../http/errors";

/** The first coding of a `Transfer-Encoding` or `Content-Encoding` list other than `known` (case-insensitive), or undefined. */
export function otherCoding(value: string | undefined, known: "chunked" | "identity"): string | undefined {
  return value
    ?.split(",")
    .map((coding) => coding.trim())
    .find((coding) => coding !== "" && coding.toLowerCase() !== known);
}

/** Global middleware: 501 `not_implemented` naming the coding, before any route reads the body. */
export const knownTransferCodings = createMiddleware<AppEnv>(async (c, next) => {
  const coding = otherCoding(c.req.header("Transfer-Encoding"), "chunked");
  if (coding !== undefined) throw new ApiError(501, "not_implemented", `Transfer-Encoding ${coding} is not implemented; only chunked is.`);
  await next();
});
