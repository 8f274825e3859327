/** Each subscription's backlog (docs/operations.md#metrics): the events after its place that it wants, paused and disabled ones too. */
import { sql } from "drizzle-orm";
import { qb, type Database } from "../../db/client";
import { execute, params } from "../../db/plan";
import { events, webhooks } from "../../db/schema";
import { frontier } from "./frontier";
import { variants } from "../../db/variants";
import type { SubscriptionBacklog } from "../../telemetry/webhooks";

/** Most events of the log read per subscription: a backlog further behind counts those it wants among them (a bounded read). */
export const BACKLOG_MAX = 10_000;

const w = webhooks;
const e = events;
const p = params<{ ids: string }>();
/** The next `BACKLOG_MAX` events after the place (NULL: the frontier): whether it wants each (its current types, found as JSON text), when each occurred. */
const tail = sql`SELECT instr(${w.events}, '"*"') OR instr(${w.events}, '"' || ${e.type} || '"') AS wanted, ${e.occurredAt} AS at
  FROM ${e} WHERE ${e.id} > coalesce(${w.place}, ${frontier}) ORDER BY ${e.id} LIMIT ${BACKLOG_MAX}`;
const backlogs = variants((some: boolean, counted: boolean) =>
  p.prepare(
    qb
      .select({
        id: w.id,
        counts: counted
          ? sql<string>`(SELECT json_array(count(*) FILTER (WHERE t.wanted), min(t.at) FILTER (WHERE t.wanted)) FROM (${tail}) t)`
          : sql<null>`NULL`,
      })
      .from(w)
      .where(some ? sql`${w.id} IN (SELECT value FROM json_each(${p("ids")}))` : undefined)
      .orderBy(w.id),
  ),
);

/** The backlog of every subscription (or of `ids`), in id order, with the age at `now` (ms) of its oldest event; `counted` false: 0s, a row read each. */
export async function readBacklogs(db: Database, now: number, ids?: readonly number[], counted = true): Promise<SubscriptionBacklog[]> {
  const rows = await execute(db, backlogs(ids !== undefined, counted), { ids: JSON.stringify(ids ?? []) });
  const parsed = rows.map(({ id, counts }) => [id, ...(counts === null ? [0, null] : JSON.parse(counts))] as [number, number, string | null]);
  return parsed.map(([id, backlog, oldest]) => ({ id, backlog, oldestAgeSeconds: oldest === null ? 0 : Math.max(0, now - Date.parse(oldest)) / 1000 }));
}
