/** Each subscription's backlog (docs/operations.md#metrics): the events after its place that it wants, paused and disabled ones too. */
import { sql } from "drizzle-orm";
import { qb, type Database } from "../../db/client";
import { execute, params } from "../../db/plan";
import { events, webhooks } from "../../db/schema";
import { frontier } from "./frontier";
import { variants } from "../../db/variants";
import type { SubscriptionBacklog } from "../../telemetry/webhooks";

/** Most events counted per subscription: a larger backlog reads as this many (a bounded read). */
export const BACKLOG_MAX = 10_000;

const w = webhooks;
const e = events;
const p = params<{ ids: string }>();
/** Events after the subscription's place (NULL: the frontier) of a type it wants (its current types). */
const wanted = sql`FROM ${e} WHERE ${e.id} > coalesce(${w.place}, ${frontier})
  AND EXISTS (SELECT 1 FROM json_each(${w.events}) WHERE value IN ('*', ${e.type}))`;
const backlogs = variants((some: boolean, counted: boolean) =>
  p.prepare(
    qb
      .select({
        id: w.id,
        backlog: counted ? sql<number>`(SELECT count(*) FROM (SELECT 1 ${wanted} LIMIT ${BACKLOG_MAX}))` : sql<number>`0`,
        oldest: counted ? sql<string | null>`(SELECT ${e.occurredAt} ${wanted} ORDER BY ${e.id} LIMIT 1)` : sql<null>`NULL`,
      })
      .from(w)
      .where(some ? sql`${w.id} IN (SELECT value FROM json_each(${p("ids")}))` : undefined)
      .orderBy(w.id),
  ),
);

/** The backlog of every subscription (or of `ids`), in id order, with the age at `now` (ms) of its oldest event; `counted` false: 0s, a row read each. */
export async function readBacklogs(db: Database, now: number, ids?: readonly number[], counted = true): Promise<SubscriptionBacklog[]> {
  const rows = await execute(db, backlogs(ids !== undefined, counted), { ids: JSON.stringify(ids ?? []) });
  return rows.map(({ id, backlog, oldest }) => ({ id, backlog, oldestAgeSeconds: oldest === null ? 0 : Math.max(0, now - Date.parse(oldest)) / 1000 }));
}
