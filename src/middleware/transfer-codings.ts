/** Transfer codings a request may use (docs/api.md#errors): `chunked` only; any other is 501 (RFC 9112 §6.1), its body left unread. */
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../http/context";
import { ApiError } from "../http/errors";

/** The first transfer coding of a `Transfer-Encoding` value other than `chunked`, or undefined. */
function unknownCoding(value: string | undefined): string | undefined {
  return value
    ?.split(",")
    .map((coding) => coding.trim())
    .find((coding) => coding !== "" && coding.toLowerCase() !== "chunked");
}

/** Global middleware: 501 `not_implemented` naming the coding, before any route reads the body. */
export const knownTransferCodings = createMiddleware<AppEnv>(async (c, next) => {
  const coding = unknownCoding(c.req.header("Transfer-Encoding"));
  if (coding !== undefined) throw new ApiError(501, "not_implemented", `Transfer-Encoding ${coding} is not implemented; only chunked is.`);
  await next();
});
