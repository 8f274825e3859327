/**
 * The POSTs that honour Idempotency-Key through the middleware, as tests of
 * idempotency drive them: a fresh body each time, the status of a replay, and
 * how many resources a body created (counted in the test's database).
 */
import type { Database } from "../../src/db/client";

/** One keyed POST: its path, a fresh body, a replay's status, and how many resources `body` made. */
export interface KeyedPost {
  path: string;
  body: () => Record<string, unknown>;
  replayStatus: number;
  count: (body: Record<string, unknown>) => Promise<number>;
}

/** One number from `client` (the first column of the first row). */
export async function scalar(client: Database, sql: string, args: (string | number)[] = []): Promise<number> {
  const result = await client.execute({ sql, args });
  return Number(result.rows[0]![0]);
}

let serial = 0;

/** A name no other call returns in this process: `prefix-<time>-<n>`. */
export const unique = (prefix: string): string => `${prefix}-${Date.now()}-${++serial}`;

/** The keyed POSTs over `client`; pets go into the category `categoryId()` names (read when a body is made). */
export function keyedPosts(client: () => Database, categoryId: () => number): KeyedPost[] {
  /** Rows of `table` whose `column` holds the body's member of that name. */
  const count = (table: string, column: "name" | "url") => (body: Record<string, unknown>) =>
    scalar(client(), `SELECT count(*) FROM ${table} WHERE ${column} = ?`, [String(body[column])]);
  return [
    { path: "/pets", body: () => ({ name: unique("pet"), categoryId: categoryId() }), replayStatus: 201, count: count("pets", "name") },
    { path: "/categories", body: () => ({ name: unique("category") }), replayStatus: 201, count: count("categories", "name") },
    { path: "/accounts/me/keys", body: () => ({ name: unique("key") }), replayStatus: 200, count: count("api_keys", "name") },
    {
      path: "/webhooks",
      body: () => ({ url: `https://example.com/hooks/${unique("hook")}`, events: ["pet.created"] }),
      replayStatus: 200,
      count: count("webhooks", "url"),
    },
  ];
}
