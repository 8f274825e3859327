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
const enabled = (row: SubscriptionSignals) => ({ "petstore.webhook.enabled": String(row.enabled) });

/** The producer, its `source` (set once the database is open: every subscription's signals, backlogs `counted` or not), and whether it `counts`. */
export type WebhookSeries = MetricProducer & { source?: (counted: boolean) => Promise<SubscriptionSignals[]>; counts: boolean };

/** A producer of the `petstore_webhook_subscription_*` series, read at each scrape; the backlog and oldest age only while it `counts` (default). */
export function webhookSeries(sdk: Sdk): WebhookSeries {
  const startTime = hrTime(Date.now());
  const producer: WebhookSeries = {
    counts: true,
    async collect() {
      const counted = producer.counts;
      // The database down: no webhook series (the error is the collect's), the process's own series still.
      const read = await producer.source?.(counted).then(
        (rows) => ({ rows, errors: [] as unknown[] }),
        (error: unknown) => ({ rows: [], errors: [error] }),
      );
      const { rows, errors } = read ?? { rows: [], errors: [] };
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
        ...(counted
          ? [
              // Paused and disabled ones too, labelled: the backlog-age alert reads the enabled ones.
              series(INSTRUMENTS.subscriptionBacklog, (row) => [[row.backlog ?? 0, enabled(row)]]),
              series(INSTRUMENTS.subscriptionOldest, (row) => [[row.oldestAgeSeconds, enabled(row)]]),
            ]
          : []),
      ];
      const scopeMetrics = rows.length > 0 ? [{ scope: { name: SCOPE }, metrics }] : [];
      return { resourceMetrics: { resource: undefined as never, scopeMetrics }, errors };
    },
  };
  return producer;
}
