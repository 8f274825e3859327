/** Node: every refusal of the edge counted by reason and logged at a bounded rate (docs/operations.md#refused-requests). */
import { everyInterval, type Logger } from "../../logger";
import { instruments } from "../../telemetry/metrics";
import { REFUSAL_REASONS, type Refusal, type RefusalReason } from "./refusals";

/**
 * The edge's refusal observer (src/runtime/node/refusals.ts `errorWriter`): counts each refusal in `petstore.http.refusals` by reason
 * (a no-op while metrics are off) and writes at most one `requests refused` line per `intervalMs`: the refusal that opens an interval,
 * with how many of each reason were refused since the last line.
 * @example errorWriter(headers, refusalObserver(logger))
 */
export function refusalObserver(logger: Logger, intervalMs = 60_000): (refusal: Refusal) => void {
  const { refusals } = instruments();
  // Every reason's series from the start: the first refusal is an increase Prometheus can see.
  for (const reason of REFUSAL_REASONS) refusals.add(0, { "petstore.refusal.reason": reason });
  const log = everyInterval<Refusal, Partial<Record<RefusalReason, number>>>(
    intervalMs,
    (since, { reason }) => ({ ...since, [reason]: (since?.[reason] ?? 0) + 1 }),
    ({ reason, error }, refused) =>
      logger.log("info", "requests refused", { reason, status: error.status, code: error.code, refused, nextLineAfterSeconds: intervalMs / 1000 }),
  );
  return (refusal) => {
    refusals.add(1, { "petstore.refusal.reason": refusal.reason });
    log(refusal);
  };
}
