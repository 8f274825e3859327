/**
 * The delivery log is a WITHOUT ROWID table (docs/webhooks.md#design: a log row is one write). drizzle-kit cannot
 * express it, so the migration that creates the table is edited by hand; a regenerated migration would drop the
 * edit silently. Checked on a database migrated as the server migrates it.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { openTestDatabase } from "../support/database";

const dir = mkdtempSync(join(tmpdir(), "petstore-rowid-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it("creates webhook_deliveries WITHOUT ROWID, keyed by (webhook_id, status, event_id)", async () => {
  const db = await openTestDatabase(`file:${join(dir, "rowid.db")}`);
  try {
    const [table] = (await db.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'webhook_deliveries'")).rows;
    expect(String(table?.[0])).toMatch(/PRIMARY KEY\s*\(\s*`?webhook_id`?\s*,\s*`?status`?\s*,\s*`?event_id`?\s*\)[\s\S]*\)\s*WITHOUT ROWID\s*$/i);
    // A WITHOUT ROWID table has no rowid column to select.
    await expect(db.execute("SELECT rowid FROM webhook_deliveries")).rejects.toThrow(/rowid/);
  } finally {
    await db.close();
  }
});
