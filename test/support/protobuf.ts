/**
 * Just enough of the protobuf wire format to read an OTLP `ExportTraceServiceRequest` (opentelemetry-proto's trace.proto field numbers)
 * into the shape OTLP/JSON gives it, for the test receiver (./otlp-receiver.ts).
 */
import type { AnyValue, KeyValue, OtlpSpan, OtlpTraces } from "./otlp-receiver";

/** A message's fields by number: varints as bigint, length-delimited and fixed fields as bytes. */
type Fields = Map<number, (bigint | Buffer)[]>;

function fields(buf: Buffer): Fields {
  const out: Fields = new Map();
  let at = 0;
  const varint = (): bigint => {
    let value = 0n;
    for (let shift = 0n; ; shift += 7n) {
      const byte = buf[at++]!;
      value |= BigInt(byte & 0x7f) << shift;
      if (byte < 0x80) return value;
    }
  };
  while (at < buf.length) {
    const key = Number(varint());
    const [field, wire] = [key >>> 3, key & 7];
    if (wire === 0) {
      out.set(field, [...(out.get(field) ?? []), varint()]);
      continue;
    }
    if (wire !== 1 && wire !== 2 && wire !== 5) throw new Error(`unsupported wire type ${wire}`);
    const length = wire === 2 ? Number(varint()) : wire === 1 ? 8 : 4;
    out.set(field, [...(out.get(field) ?? []), buf.subarray(at, at + length)]);
    at += length;
  }
  return out;
}

const all = (f: Fields, n: number) => (f.get(n) ?? []) as Buffer[];
const one = (f: Fields, n: number) => f.get(n)?.[0];
const text = (f: Fields, n: number) => (one(f, n) as Buffer | undefined)?.toString("utf8");
const hex = (f: Fields, n: number) => (one(f, n) as Buffer | undefined)?.toString("hex") ?? "";

function value(buf: Buffer): AnyValue {
  const f = fields(buf);
  if (f.has(1)) return { stringValue: text(f, 1) };
  if (f.has(2)) return { boolValue: one(f, 2) === 1n };
  if (f.has(3)) return { intValue: BigInt.asIntN(64, one(f, 3) as bigint).toString() };
  if (f.has(4)) return { doubleValue: (one(f, 4) as Buffer).readDoubleLE() };
  return {};
}

const attributes = (f: Fields, n: number): KeyValue[] =>
  all(f, n).map((kv) => {
    const k = fields(kv);
    return { key: text(k, 1) ?? "", value: value((one(k, 2) as Buffer | undefined) ?? Buffer.alloc(0)) };
  });

function span(buf: Buffer): OtlpSpan {
  const f = fields(buf);
  const status = one(f, 15) as Buffer | undefined;
  return {
    traceId: hex(f, 1),
    spanId: hex(f, 2),
    parentSpanId: hex(f, 4),
    name: text(f, 5) ?? "",
    kind: Number(one(f, 6) ?? 0n),
    attributes: attributes(f, 9),
    events: all(f, 11).map((e) => ({ name: text(fields(e), 2) ?? "" })),
    links: all(f, 13).map((l) => ({ traceId: hex(fields(l), 1), spanId: hex(fields(l), 2) })),
    status: { code: status ? Number(one(fields(status), 3) ?? 0n) : 0 },
  };
}

/** Decode an http/protobuf trace export. */
export function decodeTraces(body: Buffer): OtlpTraces {
  return {
    resourceSpans: all(fields(body), 1).map((rs) => {
      const r = fields(rs);
      const resource = one(r, 1) as Buffer | undefined;
      return {
        resource: { attributes: resource ? attributes(fields(resource), 1) : [] },
        scopeSpans: all(r, 2).map((ss) => ({ spans: all(fields(ss), 2).map(span) })),
      };
    }),
  };
}
