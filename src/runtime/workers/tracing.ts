/** Workers: the OpenTelemetry API over the runtime's custom spans (`tracing` of "cloudflare:workers"; docs/operations.md#traces). */
import { type Attributes, type ContextManager, context, INVALID_SPAN_CONTEXT, propagation, ROOT_CONTEXT, type Span, SpanKind } from "@opentelemetry/api";
import { SpanStatusCode, type Tracer, trace } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";

/** What this needs of one span of the runtime (Cloudflare's `Span`). */
export interface RuntimeSpan {
  spanContext(): { traceId: string; spanId: string; traceFlags: number };
  setAttributes(attributes: Record<string, string | number | boolean | undefined>): unknown;
  setStatus(status: { code: "unset" | "ok" | "error" }): unknown;
  recordException(exception: string | { name: string; message?: string; stack?: string }): void;
  updateName(name: string): unknown;
  end(): void;
}

/** What this needs of the runtime's `tracing` (https://developers.cloudflare.com/workers/observability/traces/custom-spans/). */
export interface RuntimeTracing {
  startActiveSpan<T>(name: string, callback: (span: RuntimeSpan) => T): T;
  getActiveSpan(): RuntimeSpan | undefined;
  withActiveSpan<T>(span: RuntimeSpan, callback: () => T): T;
}

const STATUS = { [SpanStatusCode.UNSET]: "unset", [SpanStatusCode.OK]: "ok", [SpanStatusCode.ERROR]: "error" } as const;

/** An OpenTelemetry span over a runtime span; `owned` false: one this code did not start (the invocation's), which the runtime ends. */
class WorkersSpan {
  constructor(
    readonly inner: RuntimeSpan,
    private readonly owned: boolean,
  ) {}
  spanContext = () => this.inner.spanContext();
  isRecording = () => true;
  /** `this`, once the runtime span has done what was asked: the API's setters chain. */
  private chained = (_done: unknown) => this;
  setAttribute = (key: string, value: Attributes[string]) => this.setAttributes({ [key]: value });
  /** Scalars only: the runtime takes no arrays. */
  setAttributes = (attributes: Attributes) =>
    this.chained(
      this.inner.setAttributes(Object.fromEntries(Object.entries(attributes).filter(([, value]) => !Array.isArray(value))) as Record<string, string>),
    );
  setStatus = ({ code }: { code: SpanStatusCode }) => this.chained(this.inner.setStatus({ code: STATUS[code] }));
  updateName = (name: string) => this.chained(this.inner.updateName(name));
  recordException = (exception: string | Error) => this.inner.recordException(exception);
  end = () => this.owned && this.inner.end();
  addEvent = () => this;
  addLink = this.addEvent;
  addLinks = this.addEvent;
}

/** As `Span` of the API: what it calls of one, the rest no-ops. */
const asSpan = (span: WorkersSpan) => span as unknown as Span;

/** Register `tracing` behind the OpenTelemetry API once per isolate: a SERVER span renames the invocation's; `traceparent` carries the active one; no links. */
export function registerWorkersTracing(tracing: RuntimeTracing): void {
  const contextManager: ContextManager = {
    active: () => {
      const span = tracing.getActiveSpan();
      return span ? trace.setSpan(ROOT_CONTEXT, asSpan(new WorkersSpan(span, false))) : ROOT_CONTEXT;
    },
    with: (ctx, fn, thisArg, ...args) => {
      const span = trace.getSpan(ctx) as unknown;
      return span instanceof WorkersSpan ? tracing.withActiveSpan(span.inner, () => fn.apply(thisArg, args)) : fn.apply(thisArg, args);
    },
    bind: (_ctx, target) => target,
    enable: () => contextManager,
    disable: () => contextManager,
  };
  const tracer = {
    startSpan: () => trace.wrapSpanContext(INVALID_SPAN_CONTEXT),
    startActiveSpan(name: string, ...args: unknown[]) {
      const fn = args.at(-1) as (span: Span) => unknown;
      const { kind, attributes = {} } = (typeof args[0] === "object" ? args[0] : {}) as { kind?: SpanKind; attributes?: Attributes };
      const root = kind === SpanKind.SERVER ? tracing.getActiveSpan() : undefined;
      if (root) return fn(asSpan(new WorkersSpan(root, false).updateName(name).setAttributes(attributes)));
      return tracing.startActiveSpan(name, (span) => fn(asSpan(new WorkersSpan(span, true).setAttributes(attributes))));
    },
  } as unknown as Tracer;
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider({ getTracer: () => tracer });
}
