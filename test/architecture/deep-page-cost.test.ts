/**
 * Deep pages (docs/database-cost.md#deep-pages): every list operation of the served document, as each role that may call it,
 * unfiltered and under each filter value the document names, is walked by its `Link: rel="next"` over the generated dataset
 * (test/support/cost-suite.ts) to its end or past DEEP items; the last full page there may read at most K × limit + C rows
 * (sqld's `rows_read`), at the default page size and at the largest. A keyset query that reads the rows before its cursor
 * passes page 2 in database-cost.test.ts and fails here. A new list operation is walked without a line added here, unless it
 * needs a value (a path parameter, an id filter: VALUES) or data (GROW), and then the test names it.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { MAX_ACTIVE_KEYS } from "../../src/services/accounts.service";
import { db, ids, judge, keys, receiver, returnedBy, send, useCostSuite, warm, type Who } from "../support/cost-suite";
import { concretePath, type Document, type ListCase, listCases, listOperations, missingValues, type Values } from "../support/list-operations";
import { nodeTarget } from "../support/node-target";

useCostSuite();

/**
 * A deep page may read K rows per item of its limit and C more. K = 3: the unfiltered delivery log merges three ranges (one per
 * status), each read to limit + 1. C: a parent's row (the subscription) and the `limit + 1`th rows.
 */
const K = 3;
const C = 20;
/** Items before the deep page of every unfiltered list, at its default limit: four pages. */
const MIN_DEPTH = 80;
/** A walk stops at the first page past this many items (or at the list's end): a query that reads the rows before its cursor reads 60 × its bound there. */
const DEEP = 5000;
/** Items a list short in the dataset is grown to: as many as an account may hold keys (MIN_DEPTH + a page of 20). */
const GROWN = MAX_ACTIVE_KEYS;

/** Values of path parameters and id filters, by name; a list operation taking one not named here fails the first test. */
const VALUES: Values = {
  webhookId: () => 1, // the subscription with the longest delivery log
  categoryId: () => ids.category!,
  petId: () => ids.orderPet!,
};

/** Lists the dataset keeps short (20 categories, 20 subscriptions, a key or two per account), grown through the API to GROWN items. */
const GROW: { who: Who; path: string; body: (i: number) => unknown }[] = [
  { who: "staff", path: "/categories", body: (i) => ({ name: `Deep page ${i}` }) },
  { who: "staff", path: "/webhooks", body: (i) => ({ url: receiver.url(`/hook/deep-${i}`), events: ["pet.deleted"] }) },
  { who: "staff", path: "/accounts/me/keys", body: (i) => ({ name: `deep page ${i}` }) },
  { who: "customer", path: "/accounts/me/keys", body: (i) => ({ name: `deep page ${i}` }) },
];

const target = await nodeTarget();
const served = (await (await target.fetch("/openapi.json")).json()) as Document;
await target.close();
const OPERATIONS = listOperations(served);
/** The cases of the roles this file has a key of (the first test names any other). */
const CASES = listCases(OPERATIONS, VALUES).filter((c) => c.caller in keys);

/** One page as `who` sees it: its item count and the path of the next page, if any. */
interface Page {
  path: string;
  items: number;
  /** Items of the pages before it. */
  depth: number;
  next?: string;
}

/** `path` with query parameter `name` set to `value`. */
function withParam(path: string, name: string, value: string): string {
  const url = new URL(path, "http://localhost");
  url.searchParams.set(name, value);
  return `${url.pathname}${url.search}`;
}

/** The page at `path` as `who` sees it (`depth`: the items before it). */
async function page(path: string, who: Who, depth: number): Promise<Page> {
  const res = await send(warm, "GET", path, who);
  expect(res.status, `GET ${path}: ${JSON.stringify(res.body).slice(0, 300)}`).toBe(200);
  const next = /<([^>]+)>;\s*rel="next"/.exec(res.headers.get("Link") ?? "")?.[1];
  return { path, items: returnedBy(res.body), depth, next };
}

/** The pages of the list at `start` in pages of `limit`, following `Link: rel="next"` to its end or to the first page past DEEP items. */
async function walk(start: string, who: Who, limit: number): Promise<Page[]> {
  const pages = [await page(withParam(start, "limit", String(limit)), who, 0)];
  for (let last = pages[0]!; last.next !== undefined && last.depth < DEEP; last = pages.at(-1)!) {
    pages.push(await page(last.next, who, last.depth + last.items));
  }
  return pages;
}

/** The last page of `limit` items within the items `pages` (a walk in pages of at least `limit`) reached, or the first page when none is full. */
async function lastFullPage(pages: Page[], who: Who, limit: number): Promise<Page> {
  const end = pages.at(-1)!;
  const from = end.items >= limit ? end : (pages.at(-2) ?? end);
  let full = await page(withParam(from.path, "limit", String(limit)), who, from.depth);
  for (let last = full; last.next !== undefined && last.depth + last.items < end.depth + end.items; ) {
    last = await page(last.next, who, last.depth + last.items);
    if (last.items === limit) full = last;
  }
  return full;
}

/** The path of `c`'s first page. */
function firstPage(c: ListCase): string {
  const path = concretePath(c.operation, VALUES);
  return c.filter ? withParam(path, c.filter.name, c.filter.value()) : path;
}

const walks = new Map<ListCase, Page[]>();
beforeAll(async () => {
  for (const grow of GROW) {
    const have = (await walk(grow.path, grow.who, 100)).reduce((n, p) => n + p.items, 0);
    // One at a time: writers waiting on sqld's write lock spin, and a busy machine starves the holder (vitest.config.ts, ALONE).
    for (let i = have; i < GROWN; i++) {
      const res = await send(warm, "POST", grow.path, grow.who, grow.body(i));
      expect(res.status, `POST ${grow.path}: ${JSON.stringify(res.body)}`).toBe(201);
    }
  }
  // Side by side: the walks only read, and each list's deep page is then measured alone.
  await Promise.all(CASES.map(async (c) => walks.set(c, await walk(firstPage(c), c.caller as Who, c.operation.limits.maximum))));
}, 120_000);

it("walks every list operation of the served document, as each of its roles", () => {
  expect(OPERATIONS.map((o) => o.operationId)).toEqual(expect.arrayContaining(["listPets", "listOrders", "listEvents", "listWebhookDeliveries"]));
  expect(missingValues(OPERATIONS, VALUES), "list operations whose path parameter or id filter has no value in VALUES").toEqual([]);
  const unknown = listCases(OPERATIONS, VALUES).filter((c) => !(c.caller in keys));
  expect(
    unknown.map((c) => c.label),
    "list operations of a role this test has no key of (keys in test/support/cost-suite.ts)",
  ).toEqual([]);
});

describe(`the deep page reads ≤ ${K} × limit + ${C} rows, writes none`, () => {
  for (const c of CASES) {
    it(c.label, async () => {
      const who = c.caller as Who;
      const { limits } = c.operation;
      const pages = walks.get(c)!;
      for (const limit of [limits.default, limits.maximum]) {
        const deep = await lastFullPage(pages, who, limit);
        const { value: res, cost } = await db.meter.measure(() => send(warm, "GET", deep.path, who));
        expect(res.status).toBe(200);
        judge(`${c.label} limit ${limit}`, `${returnedBy(res.body)} after ${deep.depth}`, cost, { read: K * limit + C, written: 0 });
        if (!c.filter && limit === limits.default) {
          const why = `${c.operation.operationId} as ${c.caller}: ${deep.depth} items before its deep page; grow the list in GROW`;
          expect.soft(deep.depth, why).toBeGreaterThanOrEqual(MIN_DEPTH);
        }
      }
    });
  }
});
