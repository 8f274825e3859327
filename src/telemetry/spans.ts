/** Traces through the OpenTelemetry API for every layer (docs/operations.md#traces); no-ops until a runtime registers an SDK. */
import { type Attributes, context, type Histogram, type Link, propagation, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { TraceFlags, trace } from "@opentelemetry/api";
import { SCOPE } from "./instruments";

/** The `error.type` of a thrown value (OpenTelemetry's error attribute): a driver's error code, else the error's class name. */
export function errorType(error: unknown): string {
  return error instanceof Error ? ((error as { code?: unknown }).code?.toString() ?? error.name) : "Error";
}

/**
 * Run `fn` inside an active span `name` (children started in it are its children); the span ends when `fn` settles, with status ERROR,
 * `error.type` and the exception recorded when it throws; `failed`: the `error.type` of a result that failed without throwing (set on
 * the span); `duration`: a histogram that records its seconds too (with either `error.type`).
 * Without a registered SDK the span records nothing. @returns what `fn` returns. @throws what `fn` throws.
 */
export function inSpan<T>(
  name: string,
  attributes: Attributes,
  fn: (span: Span) => Promise<T>,
  options: { kind?: SpanKind; links?: Link[]; duration?: Histogram; failed?: (result: T) => string | null } = {},
): Promise<T> {
  const { kind = SpanKind.INTERNAL, links = [], duration, failed } = options;
  const started = duration && performance.now();
  return trace.getTracer(SCOPE).startActiveSpan(name, { kind, attributes, links }, async (span) => {
    let failure: string | null | undefined;
    try {
      const result = await fn(span);
      failure = failed?.(result);
      if (failure) span.setAttribute("error.type", failure);
      return result;
    } catch (error) {
      failure = errorType(error);
      span.recordException(error instanceof Error ? error : String(error));
      span.setAttribute("error.type", failure);
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw error;
    } finally {
      span.end();
      duration?.record((performance.now() - started!) / 1000, failure ? { "error.type": failure } : {});
    }
  });
}

/** The active span's ids and sampled flag, for a log line; nothing outside a span or with traces off. */
export function traceFields(): { traceId?: string; spanId?: string; sampled?: boolean } {
  const ids = trace.getActiveSpan()?.spanContext();
  return ids ? { traceId: ids.traceId, spanId: ids.spanId, sampled: (ids.traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED } : {};
}

/** The active span as a W3C `traceparent` (https://www.w3.org/TR/trace-context/#traceparent-header), by the registered propagator; null without one. */
export function activeTraceparent(): string | null {
  const carrier: { traceparent?: string } = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ?? null;
}

/** A span link to the span a stored `traceparent` names (none when null, malformed, or no propagator is registered). */
export function linkTo(traceparent: string | null): Link[] {
  if (!traceparent) return [];
  const linked = trace.getSpanContext(propagation.extract(ROOT_CONTEXT, { traceparent }));
  return linked ? [{ context: linked }] : [];
}

/** Run `fn` outside any trace: background work a request only set off (a dispatch nudge) starts its own. */
export function detached<T>(fn: () => T): T {
  return context.with(ROOT_CONTEXT, fn);
}
