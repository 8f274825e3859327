/** The one error envelope of the API (docs/api.md#errors), `{ code, message, status, details?, requestId? }`, and the exception that carries it. */
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { ConflictCode } from "../domain/errors";

/** Stable error codes by HTTP status (docs/api.md#errors); a 409 conflict has its own code. */
export type ErrorCode =
  | ConflictCode
  | "invalid_json"
  | "bad_request"
  | "validation_error"
  | "unauthorized"
  | "forbidden"
  | "not_found"
  | "method_not_allowed"
  | "subscription_limit_reached"
  | "key_limit_reached"
  | "redelivery_limit_reached"
  | "endpoint_sunset"
  | "cursor_expired"
  | "request_timeout"
  | "precondition_failed"
  | "payload_too_large"
  | "unsupported_media_type"
  | "expectation_failed"
  | "header_too_large"
  | "category_not_found"
  | "pet_not_found"
  | "idempotency_key_reused"
  | "rate_limited"
  | "internal_error"
  | "not_implemented"
  | "database_unavailable"
  | "service_unavailable";

/** One offending input location: `path` is dotted (`body.name`, `query.limit`). */
export interface ErrorDetail {
  path: string;
  message: string;
}

/** An error that becomes an Error response, with `headers` added; thrown by handlers and middleware (services throw domain errors, src/domain/errors.ts). */
export class ApiError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetail[],
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = "ApiError";
  }

  /** The JSON body of this error (the Error object), stamped with the request id. */
  toBody(requestId?: string) {
    return {
      code: this.code,
      message: this.message,
      status: this.status,
      ...(this.details ? { details: this.details } : {}),
      ...(requestId ? { requestId } : {}),
    };
  }
}

/** 501 `not_implemented` for a method no route supports for any resource (RFC 9110 §15.6.2), e.g. CONNECT, TRACE or an unknown token. */
export function notImplemented(method: string): ApiError {
  return new ApiError(501, "not_implemented", `This server does not implement the method ${method} for any resource.`);
}
