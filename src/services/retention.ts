/** Retention (docs/architecture.md#retention): old events, revoked keys, stored idempotent responses and finished deliveries, deleted in bounded rounds. */
import { lt, sql } from "drizzle-orm";
import type { AppConfig } from "../config";
import { type Database, qb } from "../db/client";
import { boundedDelete } from "../db/bounded-delete";
import { params, run, plan, statement } from "../db/plan";
import { apiKeys, events, idempotencyKeys } from "../db/schema";
import { IDEMPOTENCY_TTL_MS } from "./idempotency.service";
import { pruneFinishedDeliveries, retentionStart } from "./webhooks/delivery-log";
import { recordRetention } from "../telemetry/metrics";
import { inSpan } from "../telemetry/spans";

/** Most rows one statement deletes. */
export const PRUNE_BATCH = 500;
/** Most rounds of one run, each its own short write batch. */
export const MAX_ROUNDS = 40;
/** How often Node runs retention, ms. */
export const RETENTION_INTERVAL_MS = 60 * 60 * 1000;

const DAY_MS = 24 * 60 * 60 * 1000;

/** The oldest `PRUNE_BATCH + 1` events with their times (rowid order = commit order): where the first event to keep is looked for. */
const logHead = qb
  .select({ id: events.id, occurredAt: events.occurredAt })
  .from(events)
  .orderBy(events.id)
  .limit(PRUNE_BATCH + 1)
  .as("log_head");

const NONE = Number.MAX_SAFE_INTEGER;

/** A retention round: what is older than `before` (events, revoked keys), `storedBefore` (idempotent responses). */
const p = params<{ before: string; storedBefore: string }>();
/** The oldest events before the first at or after `before`, at most `PRUNE_BATCH`: a prefix of the log by id, never the newest. */
const pruneEvents = p.prepare(
  qb.delete(events).where(
    lt(
      events.id,
      sql`min(
        (SELECT min(${events.id}) FROM ${events}) + ${PRUNE_BATCH},
        coalesce((SELECT ${logHead.id} FROM ${logHead} WHERE ${logHead.occurredAt} >= ${p("before")} LIMIT 1), ${NONE}),
        (SELECT max(${events.id}) FROM ${events}))`,
    ),
  ),
);

/** Up to `PRUNE_BATCH` stored idempotent responses (and abandoned claims) made before `storedBefore`. */
const pruneIdempotencyKeys = p.prepare(
  qb
    .delete(idempotencyKeys)
    .where(sql`rowid in (select rowid from ${idempotencyKeys} where ${idempotencyKeys.createdAt} < ${p("storedBefore")} limit ${PRUNE_BATCH})`),
);

/** Up to `PRUNE_BATCH` keys revoked before `before`. */
const pruneRevokedKeys = p.prepare(boundedDelete(apiKeys, apiKeys.id, lt(apiKeys.revokedAt, p("before")), PRUNE_BATCH));

const round = plan({ events: statement(pruneEvents), keys: statement(pruneRevokedKeys), idempotency: statement(pruneIdempotencyKeys) });

/** What one retention run deleted. */
export interface RetentionReport {
  events: number;
  keys: number;
  /** Stored idempotent responses. */
  idempotency: number;
  /** Finished webhook deliveries (7 days). */
  deliveries: number;
  rounds: number;
}

/** Delete what is past retention at `now`, in at most `MAX_ROUNDS` rounds: the rows deleted and rounds run. @throws the driver's error (that round undone). */
export function pruneExpired(db: Database, retentionDays: number, now: Date): Promise<RetentionReport> {
  const before = new Date(now.getTime() - retentionDays * DAY_MS).toISOString();
  const storedBefore = new Date(now.getTime() - IDEMPOTENCY_TTL_MS).toISOString();
  return inSpan("petstore.retention.run", {}, async (span) => {
    const report: RetentionReport = { events: 0, keys: 0, idempotency: 0, deliveries: 0, rounds: 0 };
    while (report.rounds < MAX_ROUNDS) {
      const result = await run(db, round, { before, storedBefore });
      report.rounds += 1;
      for (const kind of round.names as (keyof typeof result)[]) report[kind] += result[kind].rowsAffected;
      if (Math.max(...Object.values(result).map((deleted) => deleted.rowsAffected)) < PRUNE_BATCH) break;
    }
    report.deliveries = await pruneFinishedDeliveries(db, retentionStart(now), MAX_ROUNDS);
    const { rounds, ...deleted } = report;
    span.setAttribute("petstore.retention.rounds", rounds);
    for (const [kind, rows] of Object.entries(deleted)) span.setAttribute(`petstore.retention.deleted.${kind}`, rows);
    recordRetention(deleted);
    return report;
  });
}

/** True when events after the `/events` cursor `after` were pruned: the first event found after it (`firstId`) is not the next id; `after` 0 never expires. */
export function cursorExpired(after: number, firstId: number | undefined): boolean {
  return after > 0 && firstId !== undefined && firstId > after + 1;
}

/** Node: `pruneExpired` now and every `intervalMs` on an unref'd timer, never overlapping; failures to `onError`. @returns `stop()` (awaits a run). */
export function scheduleRetention(options: {
  db: Database;
  config: Pick<AppConfig, "eventRetentionDays">;
  now?: () => Date;
  intervalMs?: number;
  onError?: (error: unknown) => void;
}): { stop(): Promise<void> } {
  const { db, config, now = () => new Date(), intervalMs = RETENTION_INTERVAL_MS, onError = () => {} } = options;
  let running: Promise<void> | undefined;
  const tick = () => {
    running ??= pruneExpired(db, config.eventRetentionDays, now())
      .then(() => undefined, onError)
      .finally(() => {
        running = undefined;
      });
  };
  tick();
  const timer = setInterval(tick, intervalMs);
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      await running;
    },
  };
}
