/**
 * Per-subscription webhook series (docs/operations.md#metrics), built afresh at each scrape from src/telemetry/webhooks.ts, so a deleted
 * subscription's series go with it (an SDK instrument keeps every series it had).
 */
import { type HrTime, ValueType } from "@opentelemetry/api";
import type { MetricData, MetricProducer } from "@opentelemetry/sdk-metrics";
import { exportedName, type Instrument, INSTRUMENTS, SCOPE } from "../../telemetry/instruments";
import type { SubscriptionSignals } from "../../telemetry/webhooks";
import { ATTEMPT_OUTCOMES } from "../../domain/webhooks";

/** The SDK's enums, from the module loaded when metrics are on. */
type Sdk = Pick<typeof import("@opentelemetry/sdk-metrics"), "AggregationTemporality" | "DataPointType" | "InstrumentType">;

const hrTime = (ms: number): HrTime => [Math.floor(ms / 1000), (ms % 1000) * 1e6];

/** One subscription's points of a series: each value with its attributes besides the subscription's id. */
type Points = (row: SubscriptionSignals) => (readonly [number, Record<string, string>?])[];

/** A producer of the `petstore_webhook_subscription_*` series; `source` (set once the database is open) reads every subscription's signals at each scrape. */
export function webhookSeries(sdk: Sdk): MetricProducer & { source?: () => Promise<SubscriptionSignals[]> } {
  const startTime = hrTime(Date.now());
  const producer: MetricProducer & { source?: () => Promise<SubscriptionSignals[]> } = {
    async collect() {
      const rows = producer.source ? await producer.source() : [];
      const endTime = hrTime(Date.now());
      const series = (instrument: Instrument, points: Points): MetricData => {
        const sum = instrument.kind === "observedCounter";
        const type = sum ? sdk.InstrumentType.OBSERVABLE_COUNTER : sdk.InstrumentType.OBSERVABLE_GAUGE;
        const descriptor = {
          name: exportedName(instrument),
          description: instrument.description,
          unit: instrument.unit ?? "",
          type,
          valueType: ValueType.DOUBLE,
        };
        const dataPoints = rows.flatMap((row) =>
          points(row).map(([value, attributes]) => ({ startTime, endTime, attributes: { "petstore.webhook.id": row.id, ...attributes }, value })),
        );
        const common = { descriptor, aggregationTemporality: sdk.AggregationTemporality.CUMULATIVE, dataPoints };
        return sum ? { ...common, dataPointType: sdk.DataPointType.SUM, isMonotonic: true } : { ...common, dataPointType: sdk.DataPointType.GAUGE };
      };
      // Per subscription: delivered, every failed attempt, and the give-ups among them (ATTEMPT_OUTCOMES' label).
      const outcomes = [
        ["delivered", ATTEMPT_OUTCOMES.delivered.label],
        ["failed", "failed"],
        ["givenUp", ATTEMPT_OUTCOMES.givenUp.label],
      ] as const;
      const metrics = [
        series(INSTRUMENTS.subscriptionAttempts, (row) => outcomes.map(([key, outcome]) => [row[key], { "petstore.webhook.outcome": outcome }] as const)),
        series(INSTRUMENTS.subscriptionBacklog, (row) => [[row.backlog]]),
        series(INSTRUMENTS.subscriptionOldest, (row) => [[row.oldestAgeSeconds]]),
      ];
      const scopeMetrics = rows.length > 0 ? [{ scope: { name: SCOPE }, metrics }] : [];
      return { resourceMetrics: { resource: undefined as never, scopeMetrics }, errors: [] };
    },
  };
  return producer;
}
