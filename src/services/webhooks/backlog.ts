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
/** What a read gives per subscription: `counted`, its backlog and oldest event; `oldest`, the oldest alone (its first wanted event); `ids`, neither. */
export type BacklogRead = "counted" | "oldest" | "ids";
const summary = (count: boolean) =>
  count
    ? sql<string>`(SELECT json_array(count(*) FILTER (WHERE t.wanted), min(t.at) FILTER (WHERE t.wanted)) FROM (${tail}) t)`
    : sql<string | null>`(SELECT json_array(NULL, t.at) FROM (${tail}) t WHERE t.wanted LIMIT 1)`;
const backlogs = variants((some: boolean, count: boolean, age: boolean) =>
  p.prepare(
    qb
      .select({ id: w.id, enabled: w.enabled, counts: age ? summary(count) : sql<null>`NULL` })
      .from(w)
      .where(some ? sql`${w.id} IN (SELECT value FROM json_each(${p("ids")}))` : undefined)
      .orderBy(w.id),
  ),
);

/** Each subscription's (or `ids`') signals from the log as `read` asks, in id order; the oldest's age at `now` (ms), 0 with none. */
export async function readBacklogs(db: Database, now: number, ids?: readonly number[], read: BacklogRead = "counted"): Promise<SubscriptionBacklog[]> {
  const rows = await execute(db, backlogs(ids !== undefined, read === "counted", read !== "ids"), { ids: JSON.stringify(ids ?? []) });
  return rows.map(({ id, enabled, counts }) => {
    const [backlog, age] = (counts === null ? [null, null] : JSON.parse(counts)) as [number | null, string | null];
    return { id, enabled, ...(backlog === null ? {} : { backlog }), oldestAgeSeconds: age ? Math.max(0, now - Date.parse(age)) / 1000 : 0 };
  });
}
