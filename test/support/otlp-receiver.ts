/**
 * An OTLP/HTTP trace receiver for tests: a node:http server on 127.0.0.1 (port 0) that accepts `POST /v1/traces` in http/json and
 * http/protobuf (decoded by ./protobuf.ts) and keeps every span, flattened with its resource's attributes.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { decodeTraces } from "./protobuf";

export type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
export type KeyValue = { key: string; value: AnyValue };
/** A span as OTLP/JSON spells it (ids in hex). */
export type OtlpSpan = Omit<ReceivedSpan, "attributes" | "resource" | "events" | "status" | "links"> & {
  links?: { traceId: string; spanId: string }[];
  attributes?: KeyValue[];
  events?: { name: string; attributes?: KeyValue[] }[];
  status?: { code?: number };
};
/** An export request as OTLP/JSON spells it. */
export type OtlpTraces = { resourceSpans?: { resource?: { attributes?: KeyValue[] }; scopeSpans?: { spans?: OtlpSpan[] }[] }[] };

/** One received span: ids in hex, attributes as plain values. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP SpanKind: 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, string | number | boolean>;
  resource: Record<string, string | number | boolean>;
  /** Status code: 0 unset, 1 ok, 2 error. */
  status: number;
  /** Event names (`exception`, …). */
  events: string[];
  /** Span links: the linked spans' ids. */
  links: { traceId: string; spanId: string }[];
}

function plain(list: KeyValue[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of list ?? []) {
    out[key] = value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : (value.boolValue ?? value.doubleValue ?? ""));
  }
  return out;
}

export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** Posts in http/protobuf (`application/x-protobuf`). */
  protobufPosts = 0;
  private server: Server | undefined;

  /** Listen; resolves with the endpoint for OTEL_EXPORTER_OTLP_ENDPOINT (`http://127.0.0.1:<port>`). */
  async start(): Promise<string> {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        if (req.method !== "POST" || req.url !== "/v1/traces") {
          res.writeHead(404).end();
          return;
        }
        const body = Buffer.concat(chunks);
        if (req.headers["content-type"]?.startsWith("application/x-protobuf")) {
          this.protobufPosts += 1;
          this.add(decodeTraces(body));
        } else this.add(JSON.parse(body.toString("utf8")));
        res.writeHead(200, { "Content-Type": "application/json" }).end("{}");
      });
    });
    this.server = server;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  private add(body: OtlpTraces): void {
    for (const rs of body.resourceSpans ?? []) {
      const resource = plain(rs.resource?.attributes);
      for (const ss of rs.scopeSpans ?? []) {
        for (const { events, status, ...span } of ss.spans ?? []) {
          this.spans.push({
            ...span,
            parentSpanId: span.parentSpanId ?? "",
            attributes: plain(span.attributes),
            resource,
            status: status?.code ?? 0,
            events: (events ?? []).map((e) => e.name),
            links: (span.links ?? []).map(({ traceId, spanId }) => ({ traceId, spanId })),
          });
        }
      }
    }
  }

  /**
   * Poll until `pick` finds what it wants among the spans received so far.
   * @throws Error with the span names received when it finds nothing within `timeoutMs` (default 10 000).
   */
  async waitFor<T>(pick: (spans: ReceivedSpan[]) => T | undefined, timeoutMs = 10_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = pick(this.spans);
      if (found !== undefined) return found;
      if (Date.now() > deadline) throw new Error(`no such spans within ${timeoutMs} ms; received: ${this.spans.map((s) => s.name).join(", ")}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
