/** The request span of both runtimes (docs/operations.md#traces); on Workers it is the invocation's own span (./workers/tracing.ts). */
import { type Attributes, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../http/context";
import { matchedRoute } from "../http/router";
import { SCOPE } from "../telemetry/instruments";
import { httpMethod } from "../telemetry/metrics";
import { serverFault } from "../telemetry/request-metrics";
import { errorType } from "../telemetry/spans";

/**
 * The request span, by the HTTP server conventions: named `METHOD /route/:template`, continuing an incoming `traceparent`, `url.path`
 * without the query; a 4xx stays Unset, and so does a 501 (the client's method or coding); any other 5xx is Error with `error.type`.
 */
export function requestSpan(): MiddlewareHandler<AppEnv> {
  const tracer = trace.getTracer(SCOPE);
  return async (c, next) => {
    const url = new URL(c.req.url);
    const method = httpMethod(c.req.method);
    const attributes: Attributes = {
      "http.request.method": method,
      "url.path": url.pathname,
      "url.scheme": url.protocol.slice(0, -1),
      "server.address": url.hostname,
      "user_agent.original": c.req.header("user-agent"),
    };
    if (url.port) attributes["server.port"] = Number(url.port);
    if (method === "_OTHER") attributes["http.request.method_original"] = c.req.method;
    const parent = propagation.extract(ROOT_CONTEXT, c.req.header());
    await tracer.startActiveSpan(method === "_OTHER" ? "HTTP" : method, { kind: SpanKind.SERVER, attributes }, parent, async (span) => {
      try {
        await next();
      } finally {
        const route = matchedRoute(c)?.path;
        const status = c.res.status;
        if (route) span.setAttribute("http.route", route).updateName(`${method === "_OTHER" ? "HTTP" : method} ${route}`);
        const client = c.get("clientIp");
        if (client && client !== "unknown") span.setAttribute("client.address", client);
        span.setAttribute("http.response.status_code", status).setAttribute("http.response.header.x-request-id", c.get("requestId"));
        if (serverFault(status)) span.setAttribute("error.type", c.error ? errorType(c.error) : String(status)).setStatus({ code: SpanStatusCode.ERROR });
        span.end();
      }
    });
  };
}
