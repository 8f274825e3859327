/** The secrets that sign a subscription's deliveries (docs/webhooks.md#rotating-the-secret); owns `previous_secret`: JSON `[{"secret", "until"}]`, newest first. */
import { type SQL, sql } from "drizzle-orm";
import { webhooks } from "../../db/schema";

/** How long a replaced secret still signs, ms (Svix and Standard Webhooks: 24 h). */
export const ROTATION_OVERLAP_MS = 24 * 3600 * 1000;
/** Most replaced secrets that still sign: a delivery carries at most this many signatures beside the current one. */
export const PREVIOUS_SECRETS_MAX = 5;

interface Replaced {
  secret: string;
  until: string;
}

/** The stored list of replaced secrets, whatever form the row holds. */
function replaced(row: { previousSecret: string | null; previousSecretUntil: string | null }): Replaced[] {
  if (row.previousSecret === null) return [];
  if (row.previousSecret.startsWith("[")) return JSON.parse(row.previousSecret) as Replaced[];
  return row.previousSecretUntil === null ? [] : [{ secret: row.previousSecret, until: row.previousSecretUntil }];
}

/** The secrets that sign a delivery at `now`: the current one, then each replaced one whose 24 h have not ended, newest first. */
export function signingSecrets(row: { secret: string; previousSecret: string | null; previousSecretUntil: string | null }, now: Date): string[] {
  const signing = replaced(row).filter((x) => x.until > now.toISOString());
  return [row.secret, ...signing.map((x) => x.secret)];
}

/** The stored list as JSON in SQL (an older row's single secret as a list of one). */
const storedList = sql`CASE WHEN ${webhooks.previousSecret} IS NULL THEN '[]' WHEN ${webhooks.previousSecret} LIKE '[%' THEN ${webhooks.previousSecret}
  ELSE json_array(json_object('secret', ${webhooks.previousSecret}, 'until', ${webhooks.previousSecretUntil})) END`;

/** In SQL, the list after a rotation at `now`: the replaced secret (until `until`), then those still signing, `PREVIOUS_SECRETS_MAX` at most. */
export function rotatedSecrets(until: SQL, now: SQL): SQL<string> {
  return sql<string>`(SELECT json_group_array(json(value)) FROM (
    SELECT value FROM (
      SELECT json_object('secret', ${webhooks.secret}, 'until', ${until}) AS value, ${until} AS until
      UNION ALL SELECT value, json_extract(value, '$.until') FROM json_each(${storedList}) WHERE json_extract(value, '$.until') > ${now})
    ORDER BY until DESC LIMIT ${PREVIOUS_SECRETS_MAX}))`;
}
